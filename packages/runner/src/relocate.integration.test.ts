import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "@jest/globals";
import { describeWithTools, requireTool } from "@captf/testkit";
import { NotRelocatableError, relocateNode } from "./relocate.js";

// A real executable of this machine, given a bundle's interpreter and runpath by patchelf as
// scripts/build-bundle.mjs gives them, then relocated the way `runner copy` relocates node.
describeWithTools(["patchelf"], "relocating a bundle's node", () => {
  const dir = mkdtempSync(join(tmpdir(), "runner-relocate-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const patchelf = (...args: string[]) => execFileSync("patchelf", args, { encoding: "utf8" }).trim();
  const builtFor = (name: string, binDir: string) => {
    const file = join(dir, name);
    copyFileSync(requireTool("patchelf"), file);
    patchelf("--set-interpreter", `${binDir}/lib/ld-linux-test.so.2`, "--set-rpath", `${binDir}/lib`, file);
    return file;
  };

  it("points the interpreter and the runpath at the directory it was copied to", async () => {
    const file = builtFor("node", "/opt/captf/runner");
    await relocateNode(file, "/captf/bin");
    expect(patchelf("--print-interpreter", file)).toBe("/captf/bin/lib/ld-linux-test.so.2");
    expect(patchelf("--print-rpath", file)).toBe("/captf/bin/lib");
  });

  it("leaves a node already built for that directory byte for byte as it was", async () => {
    const file = builtFor("same", "/captf/bin");
    const before = readFileSync(file);
    await relocateNode(file, "/captf/bin");
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("refuses a directory longer than the one the bundle was built for", async () => {
    const file = builtFor("short", "/b");
    await expect(relocateNode(file, "/captf/bin")).rejects.toThrow(NotRelocatableError);
    expect(patchelf("--print-interpreter", file)).toBe("/b/lib/ld-linux-test.so.2");
  });

  it("leaves a file that is not ELF alone", async () => {
    const file = join(dir, "script");
    writeFileSync(file, "#!/bin/sh\n");
    await relocateNode(file, "/captf/bin");
    expect(readFileSync(file, "utf8")).toBe("#!/bin/sh\n");
  });
});
