#!/usr/bin/env node
// Drill: sensitive values in a module's error message. The real runner (packages/runner/dist, in
// process, as a Job runs it) applies the runner's error module under each runtime, failing three
// ways that print a sensitive credential and a passphrase of several words: a precondition's
// message (long: the runtime wraps it at spaces), a function error quoting its argument, and a
// postcondition. It counts what the runtime printed (values replaced) and every canary word found
// in stdout, stderr, the result document (the termination message) and the event bodies the runner
// sent to a local stand-in of the events API. Lost = canaries found anywhere; it must be 0.
// Encrypted (`tofu-encrypted`, spec.stateEncryption as a Job has it: --state-encryption and TF_ENCRYPTION): the same three
// failures with a state key whose pbkdf2 passphrase is a canary too, and the key's own failures: a state written under
// another key, a passphrase tofu finds too short, a configuration that is not JSON; and Terraform asked to encrypt (refused
// before any step). The state key's passphrases must appear nowhere either.
// Run `npx tsc -b` first. Usage: node bench/drills/secrets.mjs [--runtime tofu|terraform|tofu-encrypted|terraform-encrypted]
import { createServer } from "node:http";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { loadTestkit, repo } from "../lib/controller-packages.mjs";

const cli = join(repo, "packages/runner/dist/cli.js");
if (!existsSync(cli)) {
  console.error(`bench: packages are not built (${cli} is missing); run \`npx tsc -b\` first`);
  process.exit(2);
}
const { main } = await import(pathToFileURL(cli).href);
const { requireTool } = await loadTestkit();
const { values } = parseArgs({ options: { runtime: { type: "string", multiple: true } } });
const runtimes = values.runtime ?? ["tofu", "terraform", "tofu-encrypted", "terraform-encrypted"];
const modes = ["precondition", "function", "postcondition"];
const canaries = { credential: "cred-canary-31f09c6d2ab84e57", passphrase: 'orchid-5a1d gravel-c84e "ember-2f6b" harbor-90c3' };
// The state keys' pbkdf2 passphrases (tofu wants 16 characters or more; `short` is refused for its length).
const stateKeys = { first: "statekey-canary-8e41b07c5fd2a936", second: "statekey-canary-2b7f90d4c16e3a85", short: "sk-c4n4ry9" };
const words = [canaries.credential, ...canaries.passphrase.split(" ").map((word) => word.replace(/"/g, "")), ...Object.values(stateKeys)];

/** TF_ENCRYPTION in its JSON form with one pbkdf2 passphrase; `broken` leaves a trailing comma after it (not JSON). */
function tfEncryption(passphrase, broken = false) {
  const text = JSON.stringify({
    key_provider: { pbkdf2: { drill: { passphrase } } },
    method: { aes_gcm: { drill: { keys: "key_provider.pbkdf2.drill" } } },
    state: { method: "method.aes_gcm.drill" },
  });
  return broken ? text.replace(`"${passphrase}"`, `"${passphrase}",`) : text;
}

/**
 * The runs of one runtime: the module's three failures; encrypted, the same with a state key, then the key's own failures. A
 * run with `state` applies over the state file another run left (`from`); `fail_with` none applies nothing and succeeds.
 */
function runsOf(runtime) {
  const failures = modes.map((mode) => ({ name: mode, failWith: mode }));
  if (!runtime.endsWith("-encrypted")) return failures;
  const key = tfEncryption(stateKeys.first);
  if (runtime.startsWith("terraform")) return [{ name: "refused", failWith: "none", key }];
  return [
    ...failures.map((run) => ({ ...run, key })),
    { name: "first-key", failWith: "none", key },
    { name: "other-key", failWith: "none", key: tfEncryption(stateKeys.second), from: "first-key" },
    { name: "short-key", failWith: "none", key: tfEncryption(stateKeys.short) },
    { name: "not-json", failWith: "none", key: tfEncryption(stateKeys.second, true) },
  ];
}

// The events API's stand-in: records every body, answers 201.
const bodies = [];
const server = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    bodies.push(body);
    response.writeHead(201, { "content-type": "application/json" }).end("{}");
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const eventsUrl = `http://127.0.0.1:${server.address().port}`;

const base = mkdtempSync(join(tmpdir(), "captf-secrets-drill-"));
cpSync(join(repo, "packages/runner/src/testdata/error-module"), join(base, "module"), { recursive: true });
mkdirSync(join(base, "sa"));
writeFileSync(join(base, "sa", "token"), "drill-token");
const variables = {
  credential: { type: "string", sensitive: true },
  passphrase: { type: "string", sensitive: true },
  fail_with: { type: "string" },
};
const root = {
  terraform: { backend: { local: {} } },
  variable: variables,
  module: { role: { source: "../../module", ...Object.fromEntries(Object.keys(variables).map((name) => [name, `\${var.${name}}`])) } },
};

let lost = 0;
let tried = 0;
let runs = 0;
console.log(`${"runtime".padEnd(20)}${"run".padEnd(15)}${"exit".padEnd(6)}${"replaced".padEnd(10)}stdout stderr result events why`);
try {
  for (const runtime of runtimes) {
    for (const run of runsOf(runtime)) {
      const dir = join(base, `${runtime}-${run.name}`);
      const found = await runOnce(runtime, run, dir);
      runs++;
      tried += words.length * Object.keys(found.places).length;
      lost += Object.values(found.places).reduce((sum, count) => sum + count, 0);
      console.log(
        `${runtime.padEnd(20)}${run.name.padEnd(15)}${String(found.exit).padEnd(6)}${String(found.replaced).padEnd(10)}${Object.values(
          found.places,
        )
          .map((count) => String(count).padEnd(7))
          .join("")}${found.why}`,
      );
    }
  }
} finally {
  server.close();
  rmSync(base, { recursive: true, force: true });
}

/** One apply by the real runner in `dir`; the canary words found in each place it writes to. */
async function runOnce(runtime, run, dir) {
  mkdirSync(join(dir, "config"), { recursive: true });
  writeFileSync(join(dir, "config", "main.tf.json"), JSON.stringify(root));
  writeFileSync(join(dir, "config", "terraform.tfvars.json"), JSON.stringify({ ...canaries, fail_with: run.failWith }));
  // The root's ../../module resolves from <dir>/work/root.
  cpSync(join(base, "module"), join(dir, "module"), { recursive: true });
  const statePath = join(run.from ? join(dir, "..", `${runtime}-${run.from}`) : dir, "terraform.tfstate");
  const sent = bodies.length;
  let stdout = "";
  let stderr = "";
  const exit = await main(
    [
      "run",
      "--op=apply",
      `--bin=${requireTool(runtime.replace("-encrypted", ""))}`,
      "--image=registry.invalid/drill:v1",
      `--module=${join(dir, "module")}`,
      `--providers=${join(dir, "none")}`,
      `--workdir=${join(dir, "work")}`,
      `--config=${join(dir, "config")}`,
      `--backend-config=path=${statePath}`,
      `--result=${join(dir, "result.json")}`,
      "--stop-timeout=5s",
      "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/drill/leaky/u-1",
      "--job-name=leaky-apply-1",
      `--events-server=${eventsUrl}`,
      `--service-account-dir=${join(base, "sa")}`,
      ...(run.key ? ["--state-encryption"] : []),
    ],
    {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
      env: { PATH: process.env.PATH, ...(run.key ? { TF_ENCRYPTION: run.key } : {}) },
    },
  );
  const texts = { stdout, stderr, result: readFileSync(join(dir, "result.json"), "utf8"), events: bodies.slice(sent).join("\n") };
  const places = Object.fromEntries(
    Object.entries(texts).map(([place, text]) => [place, words.filter((word) => text.includes(word)).length]),
  );
  const error = JSON.parse(texts.result).error;
  const why = error ? `${error.kind}: ${error.summary.replace(/\s+/g, " ").slice(0, 70)}` : "";
  return { exit, places, why, replaced: (stdout + stderr).split("(sensitive)").length - 1 };
}
console.log(`tried ${tried} (canary word, place) pairs over ${runs} runs; lost ${lost}`);
process.exitCode = lost === 0 ? 0 : 1;
