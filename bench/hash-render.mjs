#!/usr/bin/env node
// Median time to validate, render and hash one machinepool's inputs whose cluster exports
// carry 200 instances' worth of data; target: under 1 ms. The baseline, run alternately in
// the same process, is JSON.stringify + sha256 of the same inputs: the least any hash costs.
// Run `pnpm build` first: this script imports the packages' dist/.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";

const dist = (name) => new URL(`../packages/${name}/dist/index.js`, import.meta.url);
if (!existsSync(dist("contract")) || !existsSync(dist("render"))) {
  console.error("bench: packages are not built; run `pnpm build` first");
  process.exit(2);
}
const { validateDocument, captfTags } = await import(dist("contract"));
const { inputsHash, renderGeneratedRoot } = await import(dist("render"));

const instances = Array.from({ length: 200 }, (_, i) => ({
  name: `node-${i}`,
  zone: `europe-west4-${"abc"[i % 3]}`,
  internal_ip: `10.0.${i >> 8}.${i & 255}`,
  subnet_id: `projects/p/regions/europe-west4/subnetworks/nodes-${i % 4}`,
  labels: { pool: "workers", index: String(i) },
}));
const inputs = {
  captf_contract: "v1alpha1",
  captf_cluster: { name: "prod", namespace: "team-a" },
  captf_object: { kind: "TerraformMachinePool", name: "workers", namespace: "team-a" },
  captf_tags: captfTags({ cluster: "prod", namespace: "team-a", kind: "TerraformMachinePool", name: "workers" }),
  captf_cluster_outputs: { network: "net-1", instances },
  machinepool_name: "workers",
  replicas: 200,
  bootstrap_data: Buffer.from("#cloud-config\n" + "runcmd: [echo hello]\n".repeat(200)).toString("base64"),
  bootstrap_format: "cloud-config",
  failure_domains: ["europe-west4-a", "europe-west4-b", "europe-west4-c"],
  cluster_failure_domains: ["europe-west4-a", "europe-west4-b", "europe-west4-c"],
  kubernetes_version: "v1.36.2",
  node_labels: { pool: "workers" },
  autoscaling: { enabled: true, min: 10, max: 300 },
};
const image = "ghcr.io/captf-io/gcp-machinepool:v1.0.0";

function captf() {
  const validation = validateDocument("machinepool", "inputs", inputs);
  if (!validation.valid) throw new Error(JSON.stringify(validation.errors));
  renderGeneratedRoot("machinepool", inputs);
  return inputsHash({ role: "machinepool", image, inputs });
}
function baseline() {
  return createHash("sha256").update(JSON.stringify({ image, inputs })).digest("hex");
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
function time(fn) {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

// warm-up: JIT and ajv compilation
for (let i = 0; i < 200; i++) {
  captf();
  baseline();
}
const rounds = Number(process.env.BENCH_ROUNDS ?? 2000);
const ours = [];
const base = [];
for (let i = 0; i < rounds; i++) {
  ours.push(time(captf));
  base.push(time(baseline));
}
const exportsBytes = Buffer.byteLength(JSON.stringify(inputs.captf_cluster_outputs));
console.log(`hash-render: machinepool inputs with 200 instances of exports (${exportsBytes} bytes), ${rounds} rounds`);
console.log(
  `  validate + render + hash  median ${median(ours).toFixed(3)} ms  p90 ` +
    `${[...ours].sort((a, b) => a - b)[Math.floor(rounds * 0.9)].toFixed(3)} ms`,
);
console.log(`  baseline (stringify+sha256) median ${median(base).toFixed(3)} ms`);
console.log(`  ratio ${(median(ours) / median(base)).toFixed(2)}x; target under 1 ms: ${median(ours) < 1 ? "met" : "NOT met"}`);
