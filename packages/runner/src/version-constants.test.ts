import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// scripts/version-constants.mjs: the release flow's `pnpm version-packages` (changeset version, then the constants).
const repoDir = fileURLToPath(new URL("../../..", import.meta.url));
const script = join(repoDir, "scripts/version-constants.mjs");
const constants = [
  { dir: "packages/controller", file: "src/manager-main.ts", name: "managerVersion" },
  { dir: "packages/runner", file: "src/version.ts", name: "runnerVersion" },
];

const versionOf = (root: string, dir: string) =>
  (JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as { version: string }).version;
const constantIn = (root: string, dir: string, file: string, name: string) =>
  new RegExp(`^export const ${name} = "([^"]*)";$`, "m").exec(readFileSync(join(root, dir, file), "utf8"))?.[1];

describe("the version constants in a release", () => {
  let copy: string;
  beforeAll(() => {
    // The workspace as changesets sees it (manifests, .changeset/ without its pending files) and the constants' sources.
    copy = mkdtempSync(join(tmpdir(), "version-constants-"));
    for (const file of ["package.json", "pnpm-workspace.yaml"]) cpSync(join(repoDir, file), join(copy, file));
    mkdirSync(join(copy, ".changeset"));
    cpSync(join(repoDir, ".changeset/config.json"), join(copy, ".changeset/config.json"));
    for (const dir of [...readdirSync(join(repoDir, "packages")).map((name) => `packages/${name}`), "e2e"]) {
      mkdirSync(join(copy, dir), { recursive: true });
      try {
        cpSync(join(repoDir, dir, "package.json"), join(copy, dir, "package.json"));
      } catch {
        // not a package
      }
    }
    for (const { dir, file } of constants) cpSync(join(repoDir, dir, file), join(copy, dir, file));
    symlinkSync(join(repoDir, "node_modules"), join(copy, "node_modules"));
  });
  afterAll(() => {
    rmSync(copy, { recursive: true, force: true });
  });

  it("follow package.json through `changeset version` and the script, as `pnpm version-packages` runs them", () => {
    const before = Object.fromEntries(constants.map(({ dir }) => [dir, versionOf(copy, dir)]));
    writeFileSync(
      join(copy, ".changeset/minor-release.md"),
      '---\n"@captf/controller": minor\n"@captf/runner": minor\n---\n\nA release.\n',
    );
    const versionPackages = (JSON.parse(readFileSync(join(repoDir, "package.json"), "utf8")) as { scripts: Record<string, string> })
      .scripts["version-packages"];
    expect(versionPackages).toBe("changeset version && node scripts/version-constants.mjs");
    execFileSync(process.execPath, [join(repoDir, "node_modules/@changesets/cli/bin.js"), "version"], { cwd: copy, stdio: "pipe" });
    const stale = spawnSync(process.execPath, [script, "--check", "--root", copy], { encoding: "utf8" });
    expect(stale.status).toBe(1);
    for (const { dir, name } of constants)
      expect(stale.stdout).toContain(`${name} ${before[dir]} differs from package.json's ${versionOf(copy, dir)}`);

    execFileSync(process.execPath, [script, "--root", copy], { stdio: "pipe" });
    for (const { dir, file, name } of constants) {
      expect(versionOf(copy, dir)).not.toBe(before[dir]);
      expect(constantIn(copy, dir, file, name)).toBe(versionOf(copy, dir));
    }
    expect(spawnSync(process.execPath, [script, "--check", "--root", copy]).status).toBe(0);
  });

  it("are those of this checkout's package.json", () => {
    expect(spawnSync(process.execPath, [script, "--check"], { encoding: "utf8" })).toMatchObject({ status: 0, stdout: "" });
  });
});
