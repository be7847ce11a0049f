// The hand-written parser against the tree-sitter reader it replaced: every HCL file of the
// linter's fixtures, of the repository's modules and the bench's generated module must give the
// same model, but for two misreadings of tree-sitter-hcl that the comparison undoes (see below).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { packageDir } from "../cli.test-support.js";
import { parseHclFile } from "./hcl-parser.js";
import { ModuleParseError, type ParsedFile, type ParseFailure } from "./model.js";
import { parseWithTreeSitter } from "./tree-sitter-parse.test-support.js";

const repoDir = join(packageDir, "../..");

function hclFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory() && !["node_modules", ".terraform", "dist"].includes(entry.name)) out.push(...hclFiles(join(dir, entry.name)));
    else if (entry.isFile() && /\.(tf|tofu|hcl)$/.test(entry.name)) out.push(join(dir, entry.name));
  }
  return out;
}

const corpus = [
  ...hclFiles(join(packageDir, "testdata")),
  ...readdirSync(join(repoDir, "packages"))
    .filter((p) => p.startsWith("module-"))
    .flatMap((p) => hclFiles(join(repoDir, "packages", p))),
].map((path) => relative(repoDir, path));

/** The bench's generated module, imported from the bench itself so both read the same text. */
async function benchSource(): Promise<string> {
  const bench = (await import(join(repoDir, "bench/lint.mjs"))) as { generatedSource: () => string };
  return bench.generatedSource();
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * The model as plain data, with tree-sitter-hcl's two misreadings undone on both sides so that
 * everything else compares exactly:
 * - it chains `a ? b : c ? d : e` to the left, HCL to the right: a chain compares as its operands;
 * - its scanner skips blanks before every template chunk, so a literal chunk loses the blanks at
 *   its ends (`join(", ", …)` read `","`): chunks compare trimmed, and blank ones not at all.
 */
function comparable(value: unknown): Json {
  if (Array.isArray(value)) return value.map(comparable);
  if (value === null || typeof value !== "object") return value as Json;
  const node = value as Record<string, unknown>;
  if (node.kind === "conditional")
    return { kind: "conditional chain", text: node.text as string, at: comparable(node.at), operands: chain(node).map(comparable) };
  const out: { [key: string]: Json } = {};
  for (const [key, v] of Object.entries(node)) {
    if (v === undefined) continue;
    if (node.kind === "template" && key === "parts")
      out[key] = (v as Record<string, unknown>[]).filter((p) => p.kind !== "literal" || (p.text as string).trim() !== "").map(trimmedChunk);
    else if (node.kind === "literal" && key === "value" && typeof v === "string") out[key] = v.trim();
    else if (key === "keyName" && typeof v === "string") out[key] = v.trim();
    else if (key === "labels") out[key] = (v as string[]).map((l) => l.trim());
    else out[key] = comparable(v);
  }
  return out;
}

function chain(node: Record<string, unknown>): unknown[] {
  if (node.kind !== "conditional") return [node];
  return [...chain(node.condition as Record<string, unknown>), node.whenTrue, ...chain(node.whenFalse as Record<string, unknown>)];
}

function trimmedChunk(part: Record<string, unknown>): Json {
  if (part.kind !== "literal") return comparable(part);
  const text = part.text as string;
  const lead = text.slice(0, text.length - text.trimStart().length);
  const at = part.at as { file: string; line: number; column: number };
  const newlines = lead.split("\n").length - 1;
  const column = newlines === 0 ? at.column + lead.length : lead.length - lead.lastIndexOf("\n");
  return comparable({ ...part, text: text.trim(), at: { ...at, line: at.line + newlines, column } });
}

/** Both parsers' results: the model, or the failure (a file that does not parse must fail alike). */
async function both(name: string, source: string): Promise<{ ours: ParsedFile | ParseFailure; theirs: ParsedFile | ParseFailure }> {
  const failure = (error: unknown): ParseFailure => {
    if (error instanceof ModuleParseError) return error.failure;
    throw error;
  };
  const theirs = await parseWithTreeSitter(name, source).catch(failure);
  let ours: ParsedFile | ParseFailure;
  try {
    ours = parseHclFile(name, source);
  } catch (error) {
    ours = failure(error);
  }
  return { ours, theirs };
}

describe("hcl-parser against tree-sitter", () => {
  it("reads a corpus of HCL files, one of which does not parse", () => {
    expect(corpus.length).toBeGreaterThan(100);
    expect(corpus).toContain("packages/lint/testdata/checks/module-parse/triggers/main.tf");
    expect(corpus.some((f) => f.startsWith("packages/module-noop/"))).toBe(true);
  });

  it.each(corpus)("%s", async (path) => {
    const { ours, theirs } = await both(path, readFileSync(join(repoDir, path), "utf8"));
    expect(comparable(ours)).toEqual(comparable(theirs));
  });

  it("the bench's generated module, exactly", async () => {
    const { ours, theirs } = await both("generated.tf", await benchSource());
    expect("body" in ours && ours.body.blocks.length).toBeGreaterThan(200);
    expect(ours).toEqual(theirs);
  });

  // Syntax the corpus has little or none of; every one parses the same, exactly.
  it.each([
    'a = x.0.1\nb = (x).y[0][*].z\nc = x.*.y\nd = f(x...)\ne = provider::aws::arn_parse("x").region\n',
    "a = -1 + 2 * 3 >= 4 && !false || null == null\nb = 1.5 % 2 / 3 - -x\nc = !x.y\nd = a < b != c <= d\n",
    'a = { "k" = 1, (var.k) : 2, k3 = [1, 2,], }\nb = {}\nc = []\nd = { a = 1\n  b = 2 }\n',
    'a = [for k, v in var.m : "${k}=${v}"]\nb = { for k, v in var.m : k => v... if v != null }\nc = [for x in y : x if x]\n',
    'a = "${x}${y}"\nb = "$${x} %%{y} \\u00e9\\n\\"q\\""\nc = "%{ if x }a%{ else }b%{ endif }"\nd = "%{ for i, v in xs }${i}%{ endfor }"\n',
    "a = x ? y : z\nb = (x ? y : z) ? 1 : 2\nc = x ? (y ? 1 : 2) : 3\nd = x == 1 ? y + 1 : z * 2\n",
    'block "one" two "three" {\n  nested {\n    x = 1\n  }\n  empty {}\n}\nother {\n}\n',
    '# c1\n// c2\n/* c3\n */ a = 1 # tfcapi-lint:ignore x y\nb = "# not a comment"\n',
    'a = ["é€😀", b]\nnamé = ünïcode.attr\n',
    "a = 1\n\n\n",
    "",
  ])("%j", async (source) => {
    const { ours, theirs } = await both("m.tf", source);
    expect(ours).toEqual(theirs);
  });

  it.each([
    ["an unclosed block", "a {\n  b = 1\n", 3, 1, 'syntax error: missing "}"'],
    ["an unclosed tuple", 'output "a" {\n  value = [1, 2\n}\n', 3, 1, 'syntax error: missing "]"'],
    ["an unclosed call", "a = f(1, 2\n", 2, 1, 'syntax error: missing ")"'],
    ["an unclosed object", "a = { b = 1\n", 2, 1, 'syntax error: missing "}"'],
    ["an unterminated string", 'a = "abc\nb = 1\n', 1, 9, "syntax error: missing a closing quote"],
    ["an invalid escape", 'a = "a\\qb"\n', 1, 7, 'syntax error: invalid escape "\\\\q" in a quoted string'],
    ["a missing expression", "a = \n}\n", 2, 1, 'syntax error: unexpected "}", expected an expression'],
    ["two values", "a = 1 2\n", 1, 7, 'syntax error: unexpected "2", expected an argument or a block'],
    ["a stray operator", "a = 1 +\n", 2, 1, "syntax error: unexpected end of file, expected an expression"],
    ["a block label before =", 'a "b" = 1\n', 1, 7, 'syntax error: unexpected "=", expected "{"'],
    ["an unclosed interpolation", 'a = "${x"\n', 1, 9, 'syntax error: unexpected "\\"", expected "}"'],
    ["a lone &", "a = x & y\n", 1, 7, 'syntax error: unexpected "&"'],
  ])("rejects %s, as tree-sitter does, at the offending token", async (_what, source, line, column, message) => {
    await expect(parseWithTreeSitter("m.tf", source)).rejects.toThrow(ModuleParseError);
    const error = captured(() => parseHclFile("m.tf", source));
    expect(error.failure).toEqual({ file: "m.tf", line, column, message });
  });
});

function captured(parse: () => unknown): ModuleParseError {
  try {
    parse();
  } catch (error) {
    if (error instanceof ModuleParseError) return error;
    throw error;
  }
  throw new Error("parsed without an error");
}
