import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { main } from "./cli.js";

async function run(argv: string[], cwd = process.cwd()) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    cwd,
    env: {},
  });
  return { code, stdout, stderr };
}

describe("captf-module", () => {
  it.each([[[]], [["init"]], [["build"]], [["push"]], [["test"]]])("has a --help for %j", async (command) => {
    const { code, stdout } = await run([...command, "--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/Usage: captf-module/);
    expect(stdout).toMatch(/Exit codes:/);
  });

  it("is a usage error (3) without a command, with an unknown flag, or with a bad role", async () => {
    expect((await run([])).code).toBe(3);
    expect((await run(["init", "--role", "machine", "--frobnicate"])).code).toBe(3);
    const bad = await run(["init", "--role", "bucket"]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(/Invalid values:[\s\S]*cluster.*machine.*machinepool[\s\S]*captf-module --help/);
  });

  it("init reports what it wrote, as JSON with -o json, relative to its working directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-module-cli-"));
    try {
      const { code, stdout } = await run(["init", "--role", "machinepool", "pool", "-o", "json"], dir);
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual({
        dir: join(dir, "pool"),
        role: "machinepool",
        files: ["README.md", "versions.tf", "inputs.tf", "main.tf", "outputs.tf", "tests/machinepool.tftest.hcl", ".gitignore"],
        replaced: [],
      });
      const again = await run(["init", "--role", "machinepool", "pool"], dir);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/^captf-module: \/.*\/pool is not empty .*--force/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("build fails with the fix for a runtime that is no binary, and a bad tag is a usage error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-module-cli-"));
    try {
      writeFileSync(join(dir, "tofu"), "#!/bin/sh\n");
      const notElf = await run(["build", "--runtime", "tofu", "--out", "image", "--tag", "v1"], dir);
      expect(notElf.code).toBe(1);
      expect(notElf.stderr).toMatch(/--runtime .*tofu: not a linux\/amd64 or linux\/arm64 executable/);
      const missing = await run(["build", "--runtime", "absent", "--out", "image", "--tag", "v1"], dir);
      expect(missing.stderr).toMatch(/absent: no such file/);
      expect((await run(["build", "--runtime", "tofu", "--out", "image", "--tag", "-v1"], dir)).code).toBe(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
