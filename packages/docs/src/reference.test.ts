import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";

const generator = fileURLToPath(new URL("../scripts/generate-reference.mjs", import.meta.url));

it("the generated reference pages and blocks of docs/ match the sources (run `pnpm --filter @captf/docs gen` when this fails)", () => {
  const run = spawnSync(process.execPath, [generator, "--check"], { encoding: "utf8" });
  expect([run.status, `${run.stdout}${run.stderr}`]).toEqual([0, expect.stringContaining("up to date")]);
}, 120_000);
