// The floor under the runner, for bench/runner-overhead.mjs: a Node program that does only what a
// run must do with Node at all (copy the generated root, start the steps in the runner's order
// with `version -json` beside init, pass their output on) and nothing of the runner's own work.
// What the runner measures above this is the runner; what this measures above the bare commands
// is Node's start and its child processes.
//
//   node bench/runner-floor.cjs <runtime> <config dir> <work dir> <the steps' arguments, as JSON>
const { spawn } = require("node:child_process");
const { mkdirSync, readdirSync, readFileSync, writeFileSync, writeSync } = require("node:fs");
const { join } = require("node:path");

const [runtime, configDir, workdir, stepsJson] = process.argv.slice(2);
const [first, ...rest] = JSON.parse(stepsJson);
const root = join(workdir, "root");
mkdirSync(root, { recursive: true });
for (const name of readdirSync(configDir)) writeFileSync(join(root, name), readFileSync(join(configDir, name)));
const env = { ...process.env, TF_DATA_DIR: join(workdir, ".terraform"), HOME: workdir };

function step(args, stepEnv = env) {
  return new Promise((resolve, reject) => {
    const child = spawn(runtime, args, { cwd: root, env: stepEnv, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.end();
    child.stdout.on("data", (chunk) => writeSync(1, chunk));
    child.stderr.on("data", (chunk) => writeSync(2, chunk));
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${args[0]} exited ${code}`))));
  });
}

(async () => {
  const started = step(first);
  const version = step(["version", "-json"], { ...env, GOMAXPROCS: "1" });
  await started;
  for (const args of rest) await step(args);
  await version;
  process.exit(0);
})().catch((error) => {
  writeSync(2, `${error.message}\n`);
  process.exit(1);
});
