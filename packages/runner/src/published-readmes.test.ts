import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// Each package scripts/release.mjs packs for npm ships a README: what it is, install, the smallest usage, docs/.
const repoDir = fileURLToPath(new URL("../../..", import.meta.url));

interface Manifest {
  name: string;
  private?: boolean;
  bin?: Record<string, string>;
}

const published = readdirSync(join(repoDir, "packages"))
  .filter((name) => existsSync(join(repoDir, "packages", name, "package.json")))
  .map((name) => ({
    dir: join(repoDir, "packages", name),
    manifest: JSON.parse(readFileSync(join(repoDir, "packages", name, "package.json"), "utf8")) as Manifest,
  }))
  .filter(({ manifest }) => manifest.private !== true);

/** The fenced blocks of `language` in a Markdown text. */
function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp("^```" + language + "\\n([\\s\\S]*?)^```$", "gm"))].map((match) => match[1]!);
}

describe("the READMEs of the published packages", () => {
  let consumer: string;
  beforeAll(() => {
    // A project that has the packages installed: node_modules/<name> is the package directory.
    consumer = mkdtempSync(join(tmpdir(), "readme-consumer-"));
    for (const { dir, manifest } of published) {
      mkdirSync(dirname(join(consumer, "node_modules", manifest.name)), { recursive: true });
      symlinkSync(dir, join(consumer, "node_modules", manifest.name));
    }
  });
  afterAll(() => {
    rmSync(consumer, { recursive: true, force: true });
  });

  it("are there for every published package: the five release.mjs packs", () => {
    expect(published.map(({ manifest }) => manifest.name).sort()).toEqual([
      "@captf/contract",
      "@captf/render",
      "captf-module",
      "kubectl-captf",
      "tfcapi-lint",
    ]);
  });

  describe.each(published.map(({ dir, manifest }) => [manifest.name, dir, manifest] as const))("%s", (name, dir, manifest) => {
    const readme = () => readFileSync(join(dir, "README.md"), "utf8");

    it("says what it is, how to install it, and links docs/ pages that exist", () => {
      const text = readme();
      expect(text.split("\n", 1)[0]).toBe(`# ${name}`);
      expect(codeBlocks(text, "sh").join("\n")).toMatch(
        new RegExp(`^npm install (--global |--save-dev )?${name.replace("/", "\\/")}\\b`, "m"),
      );
      const links = [...text.matchAll(/\]\((\.\.\/\.\.\/docs\/[^)#]+)\)/g)].map((match) => match[1]!);
      expect(links.length).toBeGreaterThan(0);
      for (const link of links) expect([link, existsSync(join(dir, link))]).toEqual([link, true]);
    });

    it("shows usage that works: its JavaScript prints what the comments say, its commands and flags exist", async () => {
      const text = readme();
      const scripts = codeBlocks(text, "js");
      const commands = Object.keys(manifest.bin ?? {});
      expect(scripts.length + commands.length).toBeGreaterThan(0);
      for (const [index, script] of scripts.entries()) {
        const file = join(consumer, `${name.replace("/", "-")}-${index}.mjs`);
        writeFileSync(file, script);
        const run = spawnSync(process.execPath, [file], { cwd: consumer, encoding: "utf8" });
        expect(run.stderr).toBe("");
        const promised = [...script.matchAll(/\/\/ → (.*)$/gm)].map((match) => match[1]!);
        expect(run.stdout.trimEnd().split("\n")).toEqual(promised);
      }
      for (const bin of commands) {
        // `kubectl captf …` is how kubectl runs the kubectl-captf binary; its help spells it so too.
        const helpName = bin === "kubectl-captf" ? "kubectl captf" : bin;
        const spelled = bin === "kubectl-captf" ? "kubectl captf" : `npx ${bin}`;
        // The bin runs dist/cli.js's main(argv, io): asked in-process, its help costs one load of the CLI, not one per command.
        expect(readFileSync(join(dir, manifest.bin![bin]!), "utf8")).toContain('await import("../dist/cli.js")');
        const { main } = (await import(pathToFileURL(join(dir, "dist/cli.js")).href)) as {
          main: (argv: string[], io: object) => Promise<number>;
        };
        const helps = new Map<string, string>();
        const helpOf = async (path: string[]) => {
          const key = path.join(" ");
          if (!helps.has(key)) {
            let stdout = "";
            const stream = { write: (text: string) => (stdout += text), columns: 100, isTTY: false };
            await main([...path, "--help"], { stdout: stream, stderr: { write: () => true }, env: {} });
            helps.set(key, stdout);
          }
          return helps.get(key)!;
        };
        const lines = codeBlocks(text, "sh")
          .flatMap((block) => block.split("\n"))
          .filter((line) => line.startsWith(`${spelled} `));
        expect(lines.length).toBeGreaterThan(0);
        for (const line of lines) {
          const words = line
            .slice(spelled.length)
            .split("#", 1)[0]!
            .split(/[\s>]+/)
            .filter(Boolean);
          // The command path: the leading words a help lists as a command (the others are its arguments).
          const path: string[] = [];
          for (const word of words) {
            const command = `${helpName} ${[...path, word].join(" ")}`;
            const listed = (help: string) =>
              new RegExp(`^\\s*(Usage: )?${command.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}( |$)`, "m").test(help);
            if (word.startsWith("-") || !([...helps.values()].some(listed) || listed(await helpOf(path)))) break;
            path.push(word);
          }
          expect([line, path.length]).not.toEqual([line, 0]);
          const help = await helpOf(path);
          for (const flag of words.filter((word) => word.startsWith("-")))
            expect([line, flag, help.includes(flag)]).toEqual([line, flag, true]);
        }
      }
    });
  });
});
