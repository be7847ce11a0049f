#!/usr/bin/env node
// Drill: sensitive values in a module's error message. The real runner (packages/runner/dist, in
// process, as a Job runs it) applies the runner's error module under each runtime, failing three
// ways that print a sensitive credential and a passphrase of several words: a precondition's
// message (long: the runtime wraps it at spaces), a function error quoting its argument, and a
// postcondition. It counts what the runtime printed (values replaced) and every canary word found
// in stdout, stderr, the result document (the termination message) and the event bodies the runner
// sent to a local stand-in of the events API. Lost = canaries found anywhere; it must be 0.
// Run `npx tsc -b` first. Usage: node bench/drills/secrets.mjs [--runtime tofu|terraform]
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
const runtimes = values.runtime ?? ["tofu", "terraform"];
const modes = ["precondition", "function", "postcondition"];
const canaries = { credential: "cred-canary-31f09c6d2ab84e57", passphrase: 'orchid-5a1d gravel-c84e "ember-2f6b" harbor-90c3' };
const words = [canaries.credential, ...canaries.passphrase.split(" ").map((word) => word.replace(/"/g, ""))];

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
console.log(`${"runtime".padEnd(10)}${"fails with".padEnd(15)}${"exit".padEnd(6)}${"replaced".padEnd(10)}stdout stderr result events`);
try {
  for (const runtime of runtimes) {
    for (const mode of modes) {
      const dir = join(base, `${runtime}-${mode}`);
      mkdirSync(join(dir, "config"), { recursive: true });
      writeFileSync(join(dir, "config", "main.tf.json"), JSON.stringify(root));
      writeFileSync(join(dir, "config", "terraform.tfvars.json"), JSON.stringify({ ...canaries, fail_with: mode }));
      // The root's ../../module resolves from <dir>/work/root.
      cpSync(join(base, "module"), join(dir, "module"), { recursive: true });
      const sent = bodies.length;
      let stdout = "";
      let stderr = "";
      const exit = await main(
        [
          "run",
          "--op=apply",
          `--bin=${requireTool(runtime)}`,
          "--image=registry.invalid/drill:v1",
          `--module=${join(dir, "module")}`,
          `--providers=${join(dir, "none")}`,
          `--workdir=${join(dir, "work")}`,
          `--config=${join(dir, "config")}`,
          `--backend-config=path=${join(dir, "terraform.tfstate")}`,
          `--result=${join(dir, "result.json")}`,
          "--stop-timeout=5s",
          "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/drill/leaky/u-1",
          "--job-name=leaky-apply-1",
          `--events-server=${eventsUrl}`,
          `--service-account-dir=${join(base, "sa")}`,
        ],
        { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { PATH: process.env.PATH } },
      );
      const places = { stdout, stderr, result: readFileSync(join(dir, "result.json"), "utf8"), events: bodies.slice(sent).join("\n") };
      const found = Object.fromEntries(
        Object.entries(places).map(([place, text]) => [place, words.filter((word) => text.includes(word)).length]),
      );
      const replaced = (stdout + stderr).split("(sensitive)").length - 1;
      tried += words.length * Object.keys(places).length;
      lost += Object.values(found).reduce((sum, count) => sum + count, 0);
      console.log(
        `${runtime.padEnd(10)}${mode.padEnd(15)}${String(exit).padEnd(6)}${String(replaced).padEnd(10)}${Object.values(found)
          .map((count) => String(count).padEnd(7))
          .join("")}`,
      );
    }
  }
} finally {
  server.close();
  rmSync(base, { recursive: true, force: true });
}
console.log(`tried ${tried} (canary word, place) pairs over ${runtimes.length * modes.length} failed runs; lost ${lost}`);
process.exitCode = lost === 0 ? 0 : 1;
