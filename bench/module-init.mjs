#!/usr/bin/env node
// `init` of a module image's root with a large provider, as a Job runs it (the runner's CLI config: the image's
// /captf/providers as the only filesystem mirror), from a packed mirror (the .zip `tofu providers mirror` writes) and
// from an unpacked one (the package's directory), alternating in one run. It is the figure behind captf-module build
// shipping every package unpacked. Prints each layout's median and p90 seconds, the ratio, and the mirror's and the
// working directory's size, with the load average.
// Usage: node bench/module-init.mjs [--rounds 5] [--runtime tofu|terraform] [--package <mirror>/<host>/<ns>/<type>/<version>/linux_<arch>]
// Without --package: the largest unpacked package for this machine's platform under $CAPTF_PROVIDER_MIRROR,
// ~/.cache/captf/provider-mirror or /opt/tf-plugins. Needs `zip`; run `npx tsc -b` first (it loads @captf/render's dist/).
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));
const { values: flags } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, runtime: { type: "string", default: "tofu" }, package: { type: "string" } },
});
const rounds = Number(flags.rounds);
const platform = `linux_${process.arch === "arm64" ? "arm64" : "amd64"}`;

const renderDist = join(repo, "packages/render/dist/index.js");
if (!existsSync(renderDist)) {
  console.error("bench: packages/render is not built; run `npx tsc -b` first");
  process.exit(2);
}
const { renderCliConfig } = await import(renderDist);
const runtime = process.env[`CAPTF_${flags.runtime.toUpperCase()}`] ?? flags.runtime;

/** Bytes under a path, links not followed (an init that links the package adds no bytes). */
function sizeOf(path) {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

/** Every unpacked package directory `<host>/<ns>/<type>/<version>/<platform>` of a mirror. */
function unpackedPackages(mirror) {
  const below = (path) =>
    statSync(path, { throwIfNoEntry: false })?.isDirectory() ? readdirSync(path).map((name) => join(path, name)) : [];
  return below(mirror)
    .flatMap(below)
    .flatMap(below)
    .flatMap(below)
    .map((version) => join(version, platform))
    .filter((path) => statSync(path, { throwIfNoEntry: false })?.isDirectory());
}

function largestPackage() {
  const mirrors = [process.env.CAPTF_PROVIDER_MIRROR, join(homedir(), ".cache/captf/provider-mirror"), "/opt/tf-plugins"].filter(Boolean);
  const found = mirrors.flatMap((mirror) => unpackedPackages(mirror).map((path) => ({ mirror, path, bytes: sizeOf(path) })));
  if (found.length === 0) {
    console.error(`bench: no unpacked provider package for ${platform} in ${mirrors.join(", ")}; pass --package`);
    process.exit(2);
  }
  return found.sort((a, b) => b.bytes - a.bytes)[0];
}

const chosen = flags.package ? { path: flags.package, mirror: join(flags.package, "../../../../..") } : largestPackage();
const [host, namespace, type, version] = chosen.path.slice(chosen.mirror.length).split("/").filter(Boolean);
const address = `${host}/${namespace}/${type}`;
const work = mkdtempSync(join(tmpdir(), "captf-bench-module-init-"));
const runtimeEnv = (cliConfig) => ({
  PATH: process.env.PATH ?? "",
  HOME: work,
  CHECKPOINT_DISABLE: "1",
  TF_IN_AUTOMATION: "1",
  TF_CLI_CONFIG_FILE: cliConfig,
});

try {
  // The unpacked mirror: the package alone, as captf-module build stages it.
  const unpacked = join(work, "unpacked");
  cpSync(chosen.path, join(unpacked, host, namespace, type, version, platform), { recursive: true });
  // The packed mirror: the package as a registry serves it and `providers mirror` stores it, one .zip.
  const root = join(work, "root");
  mkdirSync(root);
  const requirement = [
    "terraform {",
    "  required_providers {",
    `    ${type} = {`,
    `      source  = "${address}"`,
    `      version = "${version}"`,
    "    }",
    "  }",
    "}",
  ];
  writeFileSync(join(root, "main.tf"), `${requirement.join("\n")}\n`);
  const packed = join(work, "packed");
  mkdirSync(join(packed, host, namespace, type), { recursive: true });
  const zip = join(packed, host, namespace, type, `terraform-provider-${type}_${version}_${platform}.zip`);
  const packStart = process.hrtime.bigint();
  execFileSync("zip", ["-X", "-q", "-r", zip, "."], { cwd: chosen.path, stdio: "ignore" });
  const packSeconds = Number(process.hrtime.bigint() - packStart) / 1e9;
  writeFileSync(join(work, "packed.tfrc"), renderCliConfig({ providersDir: packed }));
  writeFileSync(join(work, "unpacked.tfrc"), renderCliConfig({ providersDir: unpacked }));

  const layouts = ["packed", "unpacked"];
  const times = { packed: [], unpacked: [] };
  const workSizes = {};
  for (let round = 0; round < rounds; round++) {
    for (const layout of round % 2 === 0 ? layouts : [...layouts].reverse()) {
      // A Job's first init: a fresh working directory, no lock file, no plugin cache.
      rmSync(join(root, ".terraform"), { recursive: true, force: true });
      rmSync(join(root, ".terraform.lock.hcl"), { force: true });
      const start = process.hrtime.bigint();
      const init = spawnSync(runtime, ["init", "-backend=false", "-input=false", "-no-color"], {
        cwd: root,
        env: runtimeEnv(join(work, `${layout}.tfrc`)),
        encoding: "utf8",
      });
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      if (init.status !== 0) throw new Error(`${layout}: ${runtime} init failed: ${init.stdout}${init.stderr}`);
      times[layout].push(seconds);
      workSizes[layout] = sizeOf(join(root, ".terraform"));
    }
  }
  const sorted = (xs) => [...xs].sort((a, b) => a - b);
  const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
  const p90 = (xs) => sorted(xs)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.9) - 1)];
  const mib = (bytes) => `${(bytes / 1048576).toFixed(0)} MiB`;
  const mirrorSizes = { packed: sizeOf(packed), unpacked: sizeOf(unpacked) };
  console.log(`module init with ${address} ${version} (${platform}), ${runtime}, ${rounds} rounds each, alternating`);
  console.log(`packing it with zip took ${packSeconds.toFixed(1)} s (once)`);
  console.log("layout    median s  p90 s   mirror      .terraform after init");
  for (const layout of layouts) {
    const line = [
      layout.padEnd(9),
      median(times[layout]).toFixed(2).padStart(8),
      p90(times[layout]).toFixed(2).padStart(6),
      `  ${mib(mirrorSizes[layout]).padEnd(11)}`,
      mib(workSizes[layout]),
    ];
    console.log(line.join(" "));
  }
  const ratio = median(times.packed) / median(times.unpacked);
  const faster = ratio >= 1 ? "unpacked" : "packed";
  console.log(`packed / unpacked median: ${ratio.toFixed(2)}; faster: ${faster} (captf-module build ships every package unpacked)`);
  console.log(
    `load average: ${loadavg()
      .map((load) => load.toFixed(2))
      .join(" ")}`,
  );
  console.log(JSON.stringify({ bench: "module-init", address, version, platform, runtime, rounds, times, mirrorSizes, workSizes, ratio }));
} finally {
  rmSync(work, { recursive: true, force: true });
}
