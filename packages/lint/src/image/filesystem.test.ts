import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import { flattenLayers, ImageTooLargeError, resolvePath } from "./filesystem.js";
import { readTar } from "./tar.js";

/** A tar of `files` (relative path → content, or null for a directory) made by GNU tar. */
function tarOf(files: Record<string, string | null>, format = "pax", links: Record<string, string> = {}): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "tfcapi-lint-tar-"));
  for (const [path, content] of Object.entries(files)) {
    if (content === null) mkdirSync(join(dir, path), { recursive: true });
    else {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
  }
  for (const [path, target] of Object.entries(links)) symlinkSync(target, join(dir, path));
  const out = join(dir, "..", `${dir.split("/").pop()}.tar`);
  execFileSync("tar", [`--format=${format}`, "-cf", out, "-C", dir, ...Object.keys({ ...files, ...links })]);
  return readFileSync(out);
}

async function* chunks(buffer: Buffer, size = 700): AsyncIterable<Buffer> {
  for (let i = 0; i < buffer.length; i += size) yield buffer.subarray(i, i + size);
}

describe("readTar", () => {
  it.each(["pax", "gnu", "ustar"])("reads %s names longer than 100 bytes, in any chunking", async (format) => {
    const long = `captf/module/${"nested/".repeat(14)}main.tf`;
    const names: string[] = [];
    const bodies = new Map<string, string>();
    const files = format === "ustar" ? { "captf/module/main.tf": "a" } : { [long]: "variable {}", "captf/module/main.tf": "a" };
    await readTar(
      chunks(tarOf(files, format)),
      (h) => (names.push(h.name), "keep"),
      (h, body) => bodies.set(h.name, body.toString()),
    );
    for (const [name, content] of Object.entries(files)) expect(bodies.get(name)).toBe(content);
  });
});

describe("flattenLayers", () => {
  it("applies whiteouts and opaque directories to lower layers only, and follows links", async () => {
    const layers = [
      tarOf({ "captf/module/a.tf": "a", "captf/module/b.tf": "b", "captf/config/x": "x", "etc/keep": "k" }),
      tarOf({ "captf/module/.wh..wh..opq": "", "captf/module/c.tf": "c", "captf/.wh.config": "", "bin/tofu": "#!" }, "pax", {
        "captf/runtime": "/bin/tofu",
      }),
    ];
    const fs = await flattenLayers(2, async (i) => chunks(i === 0 ? gzipSync(layers[0]!) : layers[1]!));
    const paths = [...fs.entries.keys()].filter((p) => p.startsWith("/captf")).sort();
    expect(paths).toEqual(["/captf/module/c.tf", "/captf/runtime"]);
    expect(fs.entries.has("/captf/module/a.tf")).toBe(false);
    expect(fs.entries.has("/captf/config/x")).toBe(false);
    expect(fs.entries.has("/etc/keep")).toBe(true);
    expect(fs.contents.get("/captf/module/c.tf")?.toString()).toBe("c");
    expect(fs.contents.has("/bin/tofu")).toBe(false);
    expect(resolvePath(fs, "/captf/runtime")?.path).toBe("/bin/tofu");
  });

  it("refuses an image whose kept bytes exceed the budget", async () => {
    const layer = tarOf({ "captf/module/big.tf": "x".repeat(4096) });
    await expect(flattenLayers(1, async () => chunks(layer), 2048)).rejects.toThrow(ImageTooLargeError);
  });
});
