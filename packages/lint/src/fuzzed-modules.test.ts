// The fuzzed-module drill (bench/drills/fuzz-modules.mjs) at a test's size: 100 mutated modules
// (truncated tokens, bad UTF-8, deep nesting, huge files, flipped bytes) through the CLI's entry
// with a fixed seed: no crash, exit 2 with a module/parse finding at a file:line:col inside the
// module wherever it does not parse.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, it } from "@jest/globals";
import fc from "fast-check";
import { main } from "./cli.js";
import { testdataDir } from "./cli.test-support.js";

const drill = fileURLToPath(new URL("../../../bench/lib/mutated-modules.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "tfcapi-lint-fuzz-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("tfcapi-lint module on mutated modules", () => {
  it("never crashes, and exits 2 with the parser's position wherever the module does not parse", async () => {
    const { mutatedModuleProperty, seedModules } = (await import(drill)) as {
      mutatedModuleProperty: (fc: unknown, subjects: unknown) => fc.IAsyncProperty<unknown>;
      seedModules: (testdata: string) => unknown;
    };
    // Huge files at 2,000 and 10,000 lines here; the drill reads 10,000 and 100,000.
    const property = mutatedModuleProperty(fc, {
      main,
      seeds: seedModules(testdataDir),
      dir: join(dir, "module"),
      hugeLines: [2_000, 10_000],
    });
    await fc.assert(property, { numRuns: 100, seed: 1717 });
  }, 120_000);
});
