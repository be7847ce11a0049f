#!/usr/bin/env node
// Fails when a line of a file the formatter covers (biome.json's files.includes, the one list) is longer than
// 140 characters. The formatter wraps code at 140 but leaves long strings, comments and JSON values as they are;
// this catches those. A line may run over only by a URL (a link cannot be broken).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

export const maxLineLength = 140;
const checked = /\.(?:[cm]?[jt]s|json)$/;

/** Git pathspecs for Biome's include patterns: "dir/**" or "*.json" as globs, "!dir" as an exclusion. */
export function pathspecs(includes) {
  return includes.map((pattern) => (pattern.startsWith("!") ? `:(exclude)${pattern.slice(1)}` : `:(glob)${pattern}`));
}

/** The lines of `text` over the limit, as { line, length }, counting a line's URLs as nothing. */
export function longLines(text) {
  const found = [];
  for (const [index, line] of text.split("\n").entries()) {
    if (line.length <= maxLineLength) continue;
    if (line.replace(/https?:\/\/\S+/g, "").length <= maxLineLength) continue;
    found.push({ line: index + 1, length: line.length });
  }
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { files } = JSON.parse(readFileSync("biome.json", "utf8"));
  // Tracked files and new ones git does not ignore: what Biome reads with vcs.useIgnoreFile.
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...pathspecs(files.includes)], {
    encoding: "utf8",
  });
  const paths = [...new Set(listed.split("\0"))].filter((path) => checked.test(path));
  let problems = 0;
  for (const path of paths) {
    let text;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      continue; // deleted in the working tree, not yet in the index
    }
    for (const { line, length } of longLines(text)) {
      problems++;
      console.error(`${path}:${line}: ${length} characters, more than ${maxLineLength}`);
    }
  }
  if (problems > 0) {
    console.error(`check-line-length: ${problems} line(s) over ${maxLineLength} characters; break the string or comment`);
    process.exit(1);
  }
  console.log(`check-line-length: ${paths.length} files, no line over ${maxLineLength} characters`);
}
