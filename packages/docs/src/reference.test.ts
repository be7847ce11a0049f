import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";

const generator = fileURLToPath(new URL("../scripts/generate-reference.mjs", import.meta.url));
const docsDir = fileURLToPath(new URL("../../../docs/", import.meta.url));

it("the generated reference pages and blocks of docs/ match the sources (run `pnpm --filter @captf/docs gen` when this fails)", () => {
  const run = spawnSync(process.execPath, [generator, "--check"], { encoding: "utf8" });
  expect([run.status, `${run.stdout}${run.stderr}`]).toEqual([0, expect.stringContaining("up to date")]);
}, 120_000);

it("names docs/events.md when it differs from what src/events.ts and the contract's reason lists generate (a hand edit)", () => {
  const copy = mkdtempSync(join(tmpdir(), "captf-docs-"));
  try {
    cpSync(docsDir, copy, { recursive: true });
    const page = join(copy, "events.md");
    const generated = readFileSync(page, "utf8");
    const edited = generated.replace("| `JobFailed` | Warning | A Job failed", "| `JobFailed` | Warning | A Job failed, by hand");
    expect(edited).not.toBe(generated);
    writeFileSync(page, edited);
    const run = spawnSync(process.execPath, [generator, "--check", "--docs", copy], { encoding: "utf8" });
    expect([run.status, run.stderr]).toEqual([
      1,
      "stale generated reference pages (run `pnpm --filter @captf/docs gen`):\n  docs/events.md\n",
    ]);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}, 120_000);
