#!/usr/bin/env node
// tfcapi-lint's wall times: one cold `tfcapi-lint module` process per no-op module and on a
// generated 2,000-line module (target: under 400 ms), and the warm per-module time of the
// in-process linter (target: under 20 ms). Medians of several runs; prints the figures and the
// machine's load average, without which figures from a shared machine mean little.
// Run `npx tsc -b` (or `pnpm build`) first: this script runs the package's dist/.
// Imported (by the parser's differential test), it only exports the generated module's source.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));
const bin = join(repo, "packages/lint/bin/tfcapi-lint.js");
const dist = join(repo, "packages/lint/dist/index.js");
const fixtureRoot = join(repo, "packages/lint/testdata/reference/good");

/** The generated.tf the bench adds to a machine module: resources, locals and user variables up to 1,900 lines. */
export function generatedSource() {
  const lines = [];
  for (let i = 0; lines.length < 1900; i++) {
    lines.push(
      `variable "setting_${i}" {`,
      `  type = object({ size = number, zones = optional(list(string), []) })`,
      `  default = { size = ${i} }`,
      `}`,
      ``,
      `resource "terraform_data" "item_${i}" {`,
      `  input = {`,
      `    name  = "\${var.machine_name}-${i}"`,
      `    tags  = merge(var.captf_tags, { index = "${i}" })`,
      `    zones = [for z in var.setting_${i}.zones : upper(z) if z != ""]`,
      `  }`,
      `  lifecycle {`,
      `    ignore_changes = [input]`,
      `  }`,
      `}`,
      ``,
    );
  }
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await bench();

async function bench() {
  if (!existsSync(dist)) {
    console.error("bench: packages/lint is not built; run `npx tsc -b` first");
    process.exit(2);
  }

  const coldRuns = Number(process.env.BENCH_COLD_RUNS ?? 7);
  const warmRuns = Number(process.env.BENCH_WARM_RUNS ?? 50);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

  // The no-op modules when they exist, else the linter's own passing fixtures.
  const noopRoot = join(repo, "packages/module-noop");
  const modules = ["cluster", "machine", "machinepool"].map((role) => {
    const noop = join(noopRoot, role);
    return { role, dir: existsSync(join(noop, "variables.tf")) ? noop : join(fixtureRoot, role) };
  });

  // A machine module padded to 2,000 lines with resources, locals and user variables.
  function generatedModule() {
    const dir = mkdtempSync(join(tmpdir(), "tfcapi-lint-bench-"));
    const base = join(fixtureRoot, "machine");
    for (const f of readdirSync(base).filter((f) => f.endsWith(".tf"))) copyFileSync(join(base, f), join(dir, f));
    const source = generatedSource();
    writeFileSync(join(dir, "generated.tf"), source);
    return { dir, lines: source.split("\n").length - 1 };
  }

  function cold(dir, role) {
    const times = [];
    for (let i = 0; i < coldRuns; i++) {
      const started = process.hrtime.bigint();
      const result = spawnSync(process.execPath, [bin, "module", dir, "--role", role, "--strict"], { encoding: "utf8" });
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (result.status !== 0) {
        console.error(`bench: tfcapi-lint exited ${result.status} on ${dir}:\n${result.stdout}${result.stderr}`);
        process.exit(1);
      }
    }
    return median(times);
  }

  const { lintModule } = await import(dist);
  async function warm(dir, role) {
    for (let i = 0; i < 5; i++) await lintModule(dir, role);
    const times = [];
    for (let i = 0; i < warmRuns; i++) {
      const started = process.hrtime.bigint();
      await lintModule(dir, role);
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return median(times);
  }

  const loadBefore = loadavg();
  const generated = generatedModule();
  const rows = [];
  for (const m of modules)
    rows.push({
      what: `${m.role} (${m.dir.includes("module-noop") ? "noop" : "fixture"})`,
      cold: cold(m.dir, m.role),
      warm: await warm(m.dir, m.role),
    });
  rows.push({
    what: `generated, ${generated.lines + 60} lines`,
    cold: cold(generated.dir, "machine"),
    warm: await warm(generated.dir, "machine"),
  });
  rmSync(generated.dir, { recursive: true, force: true });

  spawnSync(process.execPath, ["-e", "0"]); // warm the page cache first
  const started = process.hrtime.bigint();
  spawnSync(process.execPath, ["-e", "0"]);
  const nodeStart = Number(process.hrtime.bigint() - started) / 1e6;

  const load = (l) => l.map((x) => x.toFixed(2)).join(", ");
  console.log(
    `tfcapi-lint module: median of ${coldRuns} cold processes, ${warmRuns} warm in-process runs (node -e 0 alone: ` +
      `${nodeStart.toFixed(0)} ms)`,
  );
  console.log(`load average (1, 5, 15 min): ${load(loadBefore)} before, ${load(loadavg())} after`);
  console.log(`${"module".padEnd(28)} ${"cold ms".padStart(9)} ${"warm ms".padStart(9)}`);
  for (const r of rows) console.log(`${r.what.padEnd(28)} ${r.cold.toFixed(0).padStart(9)} ${r.warm.toFixed(1).padStart(9)}`);
  const worstCold = Math.max(...rows.map((r) => r.cold));
  // Every module counts, the 2,000-line one included: a target that skips a row cannot fail.
  const worstWarm = Math.max(...rows.map((r) => r.warm));
  console.log(`ratios to a bare node start: ${rows.map((r) => `${r.what.split(" ")[0]} ${(r.cold / nodeStart).toFixed(2)}x`).join(", ")}`);
  console.log(
    `targets: cold < 400 ms (${worstCold < 400 ? "met" : "missed"}: worst ${worstCold.toFixed(0)} ms), ` +
      `warm < 20 ms per module (${worstWarm < 20 ? "met" : "missed"}: worst ${worstWarm.toFixed(1)} ms)`,
  );
}
