import { mkdtempSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { findTool, MissingToolError, requireTool, toolsDirectory } from "./tools.js";

describe("tool lookup", () => {
  const dir = mkdtempSync(join(tmpdir(), "captf-tools-"));
  const fakeTofu = join(dir, "tofu");
  writeFileSync(fakeTofu, "#!/bin/sh\n");
  chmodSync(fakeTofu, 0o755);

  it("prefers the environment variable, then the tools cache's env file", () => {
    expect(findTool("tofu", { CAPTF_TOFU: fakeTofu, CAPTF_TOOLS_DIR: "/nonexistent" })).toBe(fakeTofu);
    writeFileSync(
      join(dir, "env"),
      `# generated\nexport CAPTF_TOFU=${fakeTofu}\nexport CAPTF_TOFU_ARM64=${fakeTofu}\n# CAPTF_ETCD: not built\n`,
    );
    expect(findTool("tofu", { CAPTF_TOOLS_DIR: dir })).toBe(fakeTofu);
    // A variable with digits: the other architecture's runtime.
    expect(findTool("tofu-arm64", { CAPTF_TOOLS_DIR: dir })).toBe(fakeTofu);
    expect(findTool("etcd", { CAPTF_TOOLS_DIR: dir })).toBeUndefined();
    expect(toolsDirectory({ XDG_CACHE_HOME: "/x" })).toBe("/x/captf/tools");
  });

  it("ignores a path that does not exist and names the fix when the tool is required", () => {
    expect(findTool("tofu", { CAPTF_TOFU: join(dir, "missing"), CAPTF_TOOLS_DIR: "/nonexistent" })).toBeUndefined();
    expect(() => requireTool("kube-apiserver", { CAPTF_TOOLS_DIR: "/nonexistent" })).toThrow(MissingToolError);
    expect(() => requireTool("kube-apiserver", { CAPTF_TOOLS_DIR: "/nonexistent" })).toThrow(
      /run tools\/install\.sh.*CAPTF_KUBE_APISERVER.*CAPTF_ALLOW_MISSING_TOOLS=1/,
    );
  });
});

describe("Debian tools", () => {
  it("are found on PATH and named with their package when missing", () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-path-"));
    writeFileSync(join(dir, "umoci"), "");
    expect(findTool("umoci", { PATH: `/nonexistent:${dir}` })).toBe(join(dir, "umoci"));
    expect(() => requireTool("skopeo", { PATH: dir })).toThrow(/apt-get install -y skopeo/);
  });
});
