#!/usr/bin/env node
// Drill: big and broken state at the lowest real layer: each runtime (OpenTofu, Terraform) applies
// through its kubernetes backend into a real kube-apiserver, and captf's state reader reads what
// it wrote. Tries a 20 MiB state that compresses well, a 20 MiB state that does not (over the
// 1 MiB a Secret holds), and, on a small state, a truncated gzip, a flipped byte and a changed
// lineage: what the runtime does on its next plan, and what captf's reader answers. `tofu-encrypted` is
// OpenTofu with state encryption (a pbkdf2 passphrase in TF_ENCRYPTION), read back with the same key.
// Run `npx tsc -b` first. Usage: node bench/drills/big-state.mjs [--mib 20] [--runtime tofu|tofu-encrypted|terraform]
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { parseArgs } from "node:util";
import { loadControllerFile, loadDependency, loadTestkit, requireBuilt } from "../lib/controller-packages.mjs";

requireBuilt();
const { values } = parseArgs({ options: { mib: { type: "string", default: "20" }, runtime: { type: "string", multiple: true } } });
const mib = Number(values.mib);
const k8s = await loadDependency("@kubernetes/client-node");
const { readState } = await loadControllerFile("state/read-state.js");
const { parseStateEncryption } = await loadControllerFile("state/state-encryption.js");
const { KubeClient } = await loadControllerFile("runtime/kube-client.js");
const { startControlPlane, requireTool } = await loadTestkit();
const runtimes = values.runtime ?? ["tofu", "tofu-encrypted", "terraform"];
// What spec.stateEncryption's Secret would hold: the Job's TF_ENCRYPTION and the manager's key alike.
const tfEncryption = JSON.stringify({
  key_provider: { pbkdf2: { drill: { passphrase: "big-state-drill-passphrase" } } },
  method: { aes_gcm: { drill: { keys: "key_provider.pbkdf2.drill" } } },
  state: { method: "method.aes_gcm.drill" },
});
const decryption = parseStateEncryption(tfEncryption).decryption;
const encrypted = (runtime) => runtime === "tofu-encrypted";

const plane = await startControlPlane({ controllerManager: false });
const kubeConfig = new k8s.KubeConfig();
kubeConfig.loadFromFile(plane.kubeconfigPath);
const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
// The manager's client, which the state reader takes.
const client = new KubeClient(kubeConfig);
const namespace = "big-state";
await core.createNamespace({ body: { metadata: { name: namespace } } });
const dir = mkdtempSync(join(tmpdir(), "captf-big-state-"));
writeFileSync(join(dir, "cli.tfrc"), "");
const rows = [];
const row = (runtime, case_, what) => {
  rows.push({ runtime, case: case_, ...what });
  console.log(
    `${runtime.padEnd(9)} ${case_.padEnd(26)} ${Object.entries(what)
      .map(([k, v]) => `${k}=${v}`)
      .join("  ")}`,
  );
};

/**
 * Runs the runtime asynchronously: a spawnSync of a minutes-long apply blocked the event loop while the API server closed the
 * reader's idle kept-alive connection, and the next read wrote into the closed socket (EPIPE).
 */
async function run(runtime, suffix, args) {
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    TF_CLI_CONFIG_FILE: join(dir, "cli.tfrc"),
    TF_IN_AUTOMATION: "1",
    TF_DATA_DIR: join(dir, `.data-${runtime}-${suffix}`),
    ...(encrypted(runtime) ? { TF_ENCRYPTION: tfEncryption } : {}),
  };
  const started = performance.now();
  const result = await spawned(requireTool(encrypted(runtime) ? "tofu" : runtime), args, { cwd: join(dir, `${runtime}-${suffix}`), env });
  const lastError =
    (result.stderr || result.stdout)
      .split("\n")
      .find((line) => /Error:/.test(line))
      ?.replace(/[│╷╵]/g, "")
      .trim() ?? "";
  return { exit: result.status, seconds: ((performance.now() - started) / 1000).toFixed(1), error: lastError.slice(0, 160) };
}

/** A child's exit status and its whole stdout and stderr, as spawnSync gives them, without blocking. */
function spawned(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    const out = { stdout: [], stderr: [] };
    child.stdout.on("data", (chunk) => out.stdout.push(chunk));
    child.stderr.on("data", (chunk) => out.stderr.push(chunk));
    child.on("error", reject);
    child.on("close", (status) =>
      resolve({ status, stdout: Buffer.concat(out.stdout).toString("utf8"), stderr: Buffer.concat(out.stderr).toString("utf8") }),
    );
  });
}

function writeRoot(runtime, suffix, blob) {
  const root = join(dir, `${runtime}-${suffix}`);
  rmSync(root, { recursive: true, force: true });
  execFileSync("mkdir", ["-p", root]);
  writeFileSync(
    join(root, "main.tf.json"),
    JSON.stringify({
      terraform: { backend: { kubernetes: {} } },
      resource: { terraform_data: { blob: { input: blob } } },
      output: { size: { value: blob.length } },
    }),
  );
  return root;
}

const init = (runtime, suffix) =>
  run(runtime, suffix, [
    "init",
    "-input=false",
    "-no-color",
    `-backend-config=config_path=${plane.kubeconfigPath}`,
    `-backend-config=namespace=${namespace}`,
    `-backend-config=secret_suffix=${suffix}`,
  ]);
const reading = async (suffix, runtime) => {
  // A read that fails (the API server unreachable, a connection closed under it) is this case's answer, not the drill's end.
  const r = await readState(client, namespace, suffix, undefined, encrypted(runtime) ? decryption : undefined).catch((error) => ({
    kind: "failed",
    reason: "read failed",
    message: `${error.code ?? ""} ${error.message}`.trim(),
  }));
  return r.kind === "ok"
    ? `ok serial ${r.state.serial}, ${(r.state.bytes / 2 ** 20).toFixed(1)} MiB in ${r.state.secrets} Secret(s) ` +
        `of ${(r.state.compressedBytes / 2 ** 20).toFixed(2)} MiB`
    : r.kind === "absent"
      ? "absent"
      : `${r.reason}: ${r.message}`;
};
const secretName = (suffix) => `tfstate-default-${suffix}`;

try {
  for (const runtime of runtimes) {
    for (const [case_, blob] of [
      [`${mib} MiB, compressible`, "x".repeat(mib * 2 ** 20)],
      [`${mib} MiB, incompressible`, randomBytes((mib * 2 ** 20 * 3) / 4).toString("base64")],
    ]) {
      const suffix = `${case_.includes("incompressible") ? "rand" : "flat"}-${runtime}`;
      writeRoot(runtime, suffix, blob);
      await init(runtime, suffix);
      const apply = await run(runtime, suffix, ["apply", "-auto-approve", "-input=false", "-no-color"]);
      const errored = existsSync(join(dir, `${runtime}-${suffix}`, "errored.tfstate"));
      const push = errored ? await run(runtime, suffix, ["state", "push", "-no-color", "errored.tfstate"]) : undefined;
      row(runtime, case_, {
        apply: `exit ${apply.exit} in ${apply.seconds} s${apply.error ? ` (${apply.error})` : ""}`,
        erroredTfstate: errored,
        push: push ? `exit ${push.exit}${push.error ? ` (${push.error})` : ""}` : "-",
        captf: await reading(suffix, runtime),
      });
    }

    // A small state, then damaged in its Secret the ways a disk, an operator or a bad copy would.
    const damages = {
      "truncated gzip": (gz) => gz.subarray(0, Math.floor(gz.length / 2)),
      "flipped byte": (gz) => Buffer.from(gz.map((b, i) => (i === gz.length - 12 ? b ^ 0x55 : b))),
      "changed lineage": (gz) => {
        const state = JSON.parse(gunzipSync(gz).toString());
        return gzipSync(JSON.stringify({ ...state, lineage: "00000000-0000-4000-8000-000000000000", serial: state.serial + 1 }));
      },
    };
    for (const [case_, damage] of Object.entries(damages)) {
      const suffix = `${case_.replace(/ /g, "-")}-${runtime}`;
      writeRoot(runtime, suffix, "small");
      await init(runtime, suffix);
      await run(runtime, suffix, ["apply", "-auto-approve", "-input=false", "-no-color"]);
      const secret = await core.readNamespacedSecret({ name: secretName(suffix), namespace });
      secret.data.tfstate = damage(Buffer.from(secret.data.tfstate, "base64")).toString("base64");
      await core.replaceNamespacedSecret({ name: secretName(suffix), namespace, body: secret });
      const plan = await run(runtime, suffix, ["plan", "-input=false", "-no-color", "-detailed-exitcode"]);
      row(runtime, case_, {
        plan: `exit ${plan.exit}${plan.error ? ` (${plan.error})` : " (0 = no changes, 2 = changes)"}`,
        captf: await reading(suffix, runtime),
      });
    }
  }
} finally {
  await plane.stop();
  rmSync(dir, { recursive: true, force: true });
}
