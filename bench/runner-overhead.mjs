#!/usr/bin/env node
// The runner's overhead under each runtime: `runner run --op apply` against the bare commands it
// runs (version -json, init, validate -json, apply -auto-approve) on the same module, in the same
// environment, alternating round by round so machine load hits all alike. Every run starts as a
// Job's does: the Job's runtime environment, an empty work directory (a Job's emptyDir) and state
// kept outside it (a Job's backend), so each init starts from nothing and each apply finds no
// changes. OpenTofu and, when it is installed (tools/install.sh, CAPTF_TERRAFORM), Terraform run in
// the same rounds. The steps' arguments are the runner's own (`stepsFor`). Prints the
// median of each and the ratio per runtime (target: at most 1.10; also the median of each round's
// ratio, steadier when the load moves), then the bundle's cold start. bench/runner-floor.cjs, a Node
// program that only starts the same steps, shows how much of the ratio is Node's and how much the runner's.
// The runner runs `version -json` beside init; the steps-only baseline shows the ratio without it.
// Last, with etcd and kube-apiserver installed, what the state broker adds to a run and to a Pod.
//
//   npx tsc -b && node bench/runner-overhead.mjs [--rounds 8] [--broker-only]
//
// The runner is measured as Jobs run it: the bundle that packages/runner/scripts/build-bundle.mjs
// writes (the pinned Node LTS with its libraries and the runner), laid out for the directory it
// is built into, started by its own node with the entry file a Job's command names.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";

const repo = new URL("..", import.meta.url).pathname;
// tools.js alone: the testkit index pulls in jest.
const testkitDist = join(repo, "packages/testkit/dist/tools.js");
const buildJobDist = join(repo, "packages/controller/dist/jobs/build-job.js");
const stepsDist = join(repo, "packages/runner/dist/steps.js");
if (![testkitDist, buildJobDist, stepsDist].every((file) => existsSync(file))) {
  console.error("bench: packages are not built; run `npx tsc -b` first");
  process.exit(2);
}
const { values: flags } = parseArgs({
  options: { rounds: { type: "string", default: "8" }, "broker-only": { type: "boolean", default: false } },
});
const rounds = Number(flags.rounds);
const { requireTool, findTool } = await import(testkitDist);
const { brokerContainerName, buildJob, defaultJobEnvironment, runnerRunCommand, runtimeEnvironment } = await import(buildJobDist);
const { podCgroups } = await import("./lib/pod-cgroups.mjs");
const { stepsFor } = await import(stepsDist);
// An apply's steps as the runner runs them with a Job's default lock timeout (5m0s): init, validate, apply.
const applySteps = stepsFor("apply", { workdir: "", backendConfig: [], lockTimeoutSeconds: 300, guardDeletes: false }).map(
  (step) => step.args,
);
const entry = basename(runnerRunCommand[1]);
const runtimes = { tofu: requireTool("tofu"), ...(findTool("terraform") ? { terraform: findTool("terraform") } : {}) };

const base = mkdtempSync(join(tmpdir(), "runner-overhead-"));
const bundleDir = join(base, "bundle");
const bundle = join(bundleDir, entry);
const bundleNode = join(bundleDir, "node");
execFileSync(process.execPath, [join(repo, "packages/runner/scripts/build-bundle.mjs"), "--out", bundleDir, "--bin-dir", bundleDir], {
  stdio: "ignore",
});

const root = {
  terraform: { backend: { kubernetes: {} } },
  variable: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
  module: { role: { source: "../../module", name: "${var.name}", generation: "${var.generation}", sleep_seconds: "${var.sleep_seconds}" } },
  output: { provider_id: { value: "${module.role.provider_id}", sensitive: true } },
};

/** One module image's directories, laid out as in a Job (module and config beside the work directories), with its own local state. */
function fixture(name) {
  const dir = join(base, name);
  cpSync(join(repo, "packages/runner/src/testdata/module"), join(dir, "module"), { recursive: true });
  mkdirSync(join(dir, "config"), { recursive: true });
  mkdirSync(join(dir, "tmp"));
  writeFileSync(join(dir, "config", "main.tf.json"), JSON.stringify(root));
  writeFileSync(join(dir, "config", "terraform.tfvars.json"), JSON.stringify({ name: "bench", generation: 1, sleep_seconds: 0 }));
  const state = join(dir, "state", "terraform.tfstate");
  writeFileSync(join(dir, "config", "backend_override.tf.json"), JSON.stringify({ terraform: { backend: { local: { path: state } } } }));
  return dir;
}

let runs = 0;
/** A new empty work directory beside the fixture's module, as the root's `../../module` expects. */
function freshWorkdir(dir) {
  const work = join(dir, `work-${runs++}`);
  mkdirSync(work);
  return work;
}

function timed(command, args, options = {}, expectedExit = 0) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    let stderr = "";
    child.stdout.resume();
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) =>
      code === expectedExit
        ? resolve(performance.now() - started)
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}: ${stderr.slice(-2000)}`)),
    );
  });
}

const jobEnv = (dir) => ({
  PATH: process.env.PATH,
  ...Object.fromEntries(runtimeEnvironment.map(({ name, value }) => [name, value])),
  TMPDIR: join(dir, "tmp"),
});
function runnerApply(runtime, dir) {
  return () => {
    const work = freshWorkdir(dir);
    return timed(
      bundleNode,
      [
        bundle,
        "run",
        "--op=apply",
        `--bin=${runtime}`,
        `--module=${join(dir, "module")}`,
        `--config=${join(dir, "config")}`,
        `--workdir=${work}`,
        `--providers=${join(dir, "none")}`,
        `--result=${work}.result.json`,
      ],
      { env: { ...jobEnv(dir), HOME: work } },
    );
  };
}

/** What the runner runs, without the runner: its prepared root (made before the clock starts), environment and step arguments. */
function bareApply(runtime, dir, withVersion) {
  const steps = withVersion ? [["version", "-json"], ...applySteps] : applySteps;
  return async () => {
    const work = freshWorkdir(dir);
    const rootDir = join(work, "root");
    cpSync(join(dir, "config"), rootDir, { recursive: true });
    const stepEnv = { ...jobEnv(dir), TF_DATA_DIR: join(work, ".terraform"), HOME: work };
    let total = 0;
    for (const args of steps) total += await timed(runtime, args, { cwd: rootDir, env: stepEnv });
    return total;
  };
}

/** The floor: the bundle's node running only the steps (bench/runner-floor.cjs), in the same environment. */
function floorApply(runtime, dir) {
  return () => {
    const work = freshWorkdir(dir);
    return timed(bundleNode, [join(repo, "bench/runner-floor.cjs"), runtime, join(dir, "config"), work, JSON.stringify(applySteps)], {
      env: { ...jobEnv(dir), HOME: work },
    });
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** The runner against the bare commands and the node floor, then the bundle's cold start. */
async function measureRunner() {
  const variants = {};
  for (const [name, runtime] of Object.entries(runtimes)) {
    variants[`runner (bundle), ${name}`] = runnerApply(runtime, fixture(`${name}-bundle-case`));
    variants[`node floor, ${name}`] = floorApply(runtime, fixture(`${name}-floor-case`));
    variants[`bare ${name}`] = bareApply(runtime, fixture(`${name}-bare-case`), true);
    variants[`bare ${name}, steps only`] = bareApply(runtime, fixture(`${name}-bare-steps-case`), false);
  }
  const names = Object.keys(variants);
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(1))
      .join(" ");
  const loadBefore = load();
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  // CPU the finished children used, user and system, in clock ticks (Linux /proc: utime … cstime are fields 14-17).
  const childCpuMs = () => {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    return (Number(fields[13]) + Number(fields[14])) * (1000 / 100);
  };
  const cpu = Object.fromEntries(names.map((name) => [name, 0]));
  for (const name of names) await variants[name](); // the first apply creates the resources
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, index) => names[(index + round) % names.length]);
    for (const name of order) {
      const cpuBefore = childCpuMs();
      samples[name].push(await variants[name]());
      cpu[name] += childCpuMs() - cpuBefore;
    }
  }

  console.log(
    `runner apply (no changes) vs the bare commands it runs, ${rounds} alternating rounds, medians (load average ${loadBefore} before, ` +
      `${load()} after):`,
  );
  for (const name of names) console.log(`  ${name.padEnd(28)} ${median(samples[name]).toFixed(0).padStart(6)} ms`);
  for (const name of Object.keys(runtimes)) {
    const runner = median(samples[`runner (bundle), ${name}`]);
    const ratio = runner / median(samples[`bare ${name}`]);
    const stepsOnly = runner / median(samples[`bare ${name}, steps only`]);
    // Load moves while the rounds run: the median of each round's own ratio (runner and bare a few seconds apart) moves less.
    const paired = median(samples[`runner (bundle), ${name}`].map((value, round) => value / samples[`bare ${name}`][round]));
    const floor = median(samples[`node floor, ${name}`]) / median(samples[`bare ${name}`]);
    console.log(
      `${name}: bundle ratio ${ratio.toFixed(3)} (target <= 1.10: ${ratio <= 1.1 ? "met" : "missed"}), ` +
        `median of the rounds' ratios ${paired.toFixed(3)}; against the steps alone ${stepsOnly.toFixed(3)}; ` +
        `node floor ${floor.toFixed(3)}`,
    );
  }
  // Under a loaded machine every millisecond of CPU costs several of wall time: the CPU the runs used says what the runner adds.
  console.log(`CPU of the processes, mean per run (user + system):`);
  for (const name of names) console.log(`  ${name.padEnd(28)} ${(cpu[name] / rounds).toFixed(0).padStart(6)} ms`);
  for (const name of Object.keys(runtimes))
    console.log(`${name}: CPU ratio ${(cpu[`runner (bundle), ${name}`] / cpu[`bare ${name}`]).toFixed(3)}`);
  if (!runtimes.terraform) console.log("terraform: not installed (tools/install.sh builds it; or set CAPTF_TERRAFORM), not measured");

  // A run stopped by preflight (no runtime): the start of every Job's run, without its steps.
  const preflight = join(base, "preflight");
  mkdirSync(preflight);
  const preflightRun = [
    "run",
    "--op=apply",
    `--bin=${join(preflight, "none")}`,
    `--module=${preflight}`,
    `--config=${preflight}`,
    `--workdir=${join(preflight, "work")}`,
    `--result=${join(preflight, "result.json")}`,
  ];
  const coldStarts = {
    "node -e 0": [bundleNode, ["-e", "0"]],
    [`${entry} run (preflight)`]: [bundleNode, [bundle, ...preflightRun]],
    [`${entry} version`]: [bundleNode, [bundle, "version"]],
  };
  const cold = Object.fromEntries(Object.keys(coldStarts).map((name) => [name, []]));
  for (let round = 0; round < 10; round++)
    for (const [name, [command, args]] of Object.entries(coldStarts))
      cold[name].push(await timed(command, args, {}, args[1] === "run" ? 1 : 0));
  console.log("cold start, median of 10:");
  for (const name of Object.keys(cold)) console.log(`  ${name.padEnd(28)} ${median(cold[name]).toFixed(0).padStart(5)} ms`);
}

if (!flags["broker-only"]) await measureRunner();
await measureBroker();
rmSync(base, { recursive: true, force: true });

/**
 * The state broker's cost, with state in Kubernetes as in a Job. A Job's Pod as the kubelet starts it
 * (one container after the other): before the broker, the init container copying the runner into
 * the Pod's /captf/bin, then the runner with the backend talking to the API server itself; now, the
 * broker's sidecar first (from the image's own bundle), then the same copy, then the runner with the
 * backend going through the broker. Also, as the worst case no kubelet gives, the broker and the
 * runner started at the same instant. Its memory: the broker's resident set at the end of each run,
 * and the part of it a Pod pays for beside the runner (its anonymous memory: the node binary's pages
 * are the runner's too, one file in the image).
 */
async function measureBroker() {
  if (!findTool("etcd") || !findTool("kube-apiserver")) {
    console.log("state broker: not measured (etcd and kube-apiserver are not installed: tools/install.sh)");
    return;
  }
  const { startControlPlane } = await import(join(repo, "packages/testkit/dist/control-plane.js"));
  // Each container's process in the cgroup the kubelet would give it, from the Job captf builds.
  const podSpec = buildJob({
    owner: { role: "machine", name: "bench", namespace: "default", uid: "00000000-0000-4000-8000-000000000001", clusterName: "bench" },
    op: "apply",
    attempt: 1,
    image: "example.test/module:bench",
    inputsHash: `h2:${"0".repeat(64)}`,
  }).spec.template.spec;
  const withBroker = podCgroups(podSpec, "broker");
  const beforeBroker = podCgroups(
    { ...podSpec, initContainers: podSpec.initContainers.filter((container) => container.name !== brokerContainerName) },
    "direct",
  );
  const [copyContainer, runnerContainer] = [podSpec.initContainers.at(-1).name, podSpec.containers[0].name];
  const inContainer = (cgroups, container, command, args) => (cgroups ? cgroups.wrap(container, command, args) : [command, args]);
  const plane = await startControlPlane({ controllerManager: false });
  try {
    const namespace = "default";
    const credentials = join(base, "service-account");
    mkdirSync(credentials);
    writeFileSync(join(credentials, "token"), plane.token);
    writeFileSync(join(credentials, "ca.crt"), readFileSync(plane.caFile));
    const object = `infrastructure.cluster.x-k8s.io/v1alpha1/TerraformMachine/${namespace}/bench/00000000-0000-4000-8000-000000000001`;
    // The image's bundle is bundleDir: the broker runs from it, the copy container copies it (runner.mjs copy).
    const [, ...brokerNodeFlags] = defaultJobEnvironment.brokerCommand.slice(0, -1);
    const brokerEntry = join(bundleDir, basename(defaultJobEnvironment.brokerCommand.at(-1)));
    const startBroker = (brokerDir, suffix) =>
      spawn(
        ...inContainer(withBroker, brokerContainerName, bundleNode, [
          ...brokerNodeFlags,
          brokerEntry,
          `--event-object=${object}`,
          `--state-suffix=${suffix}`,
          `--dir=${brokerDir}`,
          `--result=${brokerDir}.summary.json`,
          `--server=${plane.server}`,
          `--service-account-dir=${credentials}`,
        ]),
        { stdio: "ignore", env: { PATH: process.env.PATH } },
      );
    const stopBroker = async (broker, brokerDir) => {
      const memory = Object.fromEntries(
        readFileSync(`/proc/${broker.pid}/smaps_rollup`, "utf8")
          .split("\n")
          .map((line) => /^(\w+):\s+(\d+) kB/.exec(line))
          .filter(Boolean)
          .map(([, key, kb]) => [key, Number(kb) / 1024]),
      );
      // utime and stime, in clock ticks (100 per second on Linux), after the command name's parenthesis.
      const [utime, stime] = readFileSync(`/proc/${broker.pid}/stat`, "utf8").split(") ")[1].split(" ").slice(11, 13).map(Number);
      broker.kill("SIGTERM");
      await new Promise((resolve) => broker.once("exit", resolve));
      const summary = JSON.parse(readFileSync(`${brokerDir}.summary.json`, "utf8"));
      if (summary.refused !== 0) throw new Error(`the broker refused requests of a plain apply: ${JSON.stringify(summary)}`);
      return {
        rss: memory.Rss,
        anonymous: memory.Pss_Anon ?? memory.Private_Dirty,
        requests: summary.requests,
        cpuMs: (utime + stime) * 10,
      };
    };
    const copyRunner = (cgroups, bin) =>
      timed(...inContainer(cgroups, copyContainer, bundleNode, [join(bundleDir, "runner.mjs"), "copy", bin]), {
        env: { PATH: process.env.PATH },
      });
    const variantsByName = {};
    for (const [name, runtime] of Object.entries(runtimes)) {
      const direct = fixture(`${name}-direct-case`);
      const brokered = fixture(`${name}-broker-case`);
      for (const dir of [direct, brokered]) rmSync(join(dir, "config", "backend_override.tf.json"));
      const backend = (suffix, connection) =>
        [`secret_suffix=${suffix}`, `namespace=${namespace}`, connection].map((value) => `--backend-config=${value}`);
      const runArgs = (dir, work) => [
        "run",
        "--op=apply",
        `--bin=${runtime}`,
        `--module=${join(dir, "module")}`,
        `--config=${join(dir, "config")}`,
        `--workdir=${work}`,
        `--providers=${join(dir, "none")}`,
        `--result=${work}.result.json`,
      ];
      const directArgs = (work) => [...runArgs(direct, work), ...backend(`${name}direct00000000-m`, `config_path=${plane.kubeconfigPath}`)];
      const brokeredArgs = (work, brokerDir) => [
        ...runArgs(brokered, work),
        `--broker=${brokerDir}`,
        ...backend(`${name}broker00000000-m`, `config_path=${join(brokerDir, "kubeconfig")}`),
      ];
      // The runner as the Pod's main container starts it: from the copy in its /captf/bin.
      // A Pod's /captf/bin: no longer than the bundle's directory, which the copy's relocation needs.
      const podBin = () => join(base, `p${runs++}`);
      const runFrom = (cgroups, bin, args, dir, work) =>
        timed(...inContainer(cgroups, runnerContainer, join(bin, "node"), [join(bin, entry), ...args]), {
          env: { ...jobEnv(dir), HOME: work },
        });
      variantsByName[`Pod before the broker, ${name}`] = async () => {
        const work = freshWorkdir(direct);
        const bin = podBin();
        const started = performance.now();
        await copyRunner(beforeBroker, bin);
        await runFrom(beforeBroker, bin, directArgs(work), direct, work);
        const ms = performance.now() - started;
        rmSync(bin, { recursive: true, force: true });
        return { ms };
      };
      variantsByName[`Pod with the broker, ${name}`] = async () => {
        const work = freshWorkdir(brokered);
        const brokerDir = `${work}.broker`;
        const bin = podBin();
        const started = performance.now();
        const broker = startBroker(brokerDir, `${name}broker00000000-m`);
        await copyRunner(withBroker, bin);
        await runFrom(withBroker, bin, brokeredArgs(work, brokerDir), brokered, work);
        const ms = performance.now() - started;
        rmSync(bin, { recursive: true, force: true });
        return { ms, ...(await stopBroker(broker, brokerDir)) };
      };
      // The floor of any sidecar in Node: the same Pod with a first container that only starts Node and waits.
      variantsByName[`Pod with an idle Node sidecar, ${name}`] = async () => {
        const work = freshWorkdir(direct);
        const bin = podBin();
        const started = performance.now();
        const sidecar = spawn(
          ...inContainer(withBroker, brokerContainerName, bundleNode, [...brokerNodeFlags, "-e", "setInterval(() => {}, 1e6)"]),
          { stdio: "ignore", env: { PATH: process.env.PATH } },
        );
        await copyRunner(withBroker, bin);
        await runFrom(withBroker, bin, directArgs(work), direct, work);
        const ms = performance.now() - started;
        sidecar.kill("SIGKILL");
        await new Promise((resolve) => sidecar.once("exit", resolve));
        rmSync(bin, { recursive: true, force: true });
        return { ms };
      };
      variantsByName[`runner alone, ${name}`] = async () => {
        const work = freshWorkdir(direct);
        return { ms: await runFrom(beforeBroker, bundleDir, directArgs(work), direct, work) };
      };
      // The broker's start apart: the same run through a broker that was already serving.
      variantsByName[`runner through a running broker, ${name}`] = async () => {
        const work = freshWorkdir(brokered);
        const brokerDir = `${work}.broker`;
        const broker = startBroker(brokerDir, `${name}broker00000000-m`);
        while (!existsSync(join(brokerDir, "kubeconfig"))) await new Promise((resolve) => setTimeout(resolve, 5));
        await new Promise((resolve) => setTimeout(resolve, 300)); // its warm-up request done
        const ms = await runFrom(withBroker, bundleDir, brokeredArgs(work, brokerDir), brokered, work);
        return { ms, ...(await stopBroker(broker, brokerDir)) };
      };
      variantsByName[`runner + broker at one instant, ${name}`] = async () => {
        const work = freshWorkdir(brokered);
        const brokerDir = `${work}.broker`;
        const broker = startBroker(brokerDir, `${name}broker00000000-m`);
        const ms = await runFrom(withBroker, bundleDir, brokeredArgs(work, brokerDir), brokered, work);
        return { ms, ...(await stopBroker(broker, brokerDir)) };
      };
    }
    const brokerNames = Object.keys(variantsByName);
    const results = Object.fromEntries(brokerNames.map((name) => [name, []]));
    for (const name of brokerNames) await variantsByName[name](); // the first apply creates the state and the resources
    for (let round = 0; round < rounds; round++) {
      for (const name of brokerNames.map((_, index) => brokerNames[(index + round) % brokerNames.length]))
        results[name].push(await variantsByName[name]());
    }
    console.log(
      `state broker: a Job's Pod, runner apply (no changes, state in a Secret on a local kube-apiserver), ` +
        `${rounds} alternating rounds, medians; ` +
        (withBroker
          ? `each container in its own ${withBroker.kind} CPU cgroup as the kubelet makes it ` +
            "(shares from its request, quota from its limit):"
          : "without the kubelet's CPU cgroups (needs root and a writable cpu controller): every process shares the CPU alike:"),
    );
    for (const name of brokerNames)
      console.log(
        `  ${name.padEnd(48)} ${median(results[name].map((run) => run.ms))
          .toFixed(0)
          .padStart(6)} ms`,
      );
    const added = (withBroker, without) => {
      const difference = median(results[withBroker].map((run) => run.ms)) - median(results[without].map((run) => run.ms));
      const paired = median(results[withBroker].map((run, round) => run.ms - results[without][round].ms));
      return { difference, paired, worst: Math.max(difference, paired) };
    };
    for (const name of Object.keys(runtimes)) {
      const brokered = results[`Pod with the broker, ${name}`];
      const pod = added(`Pod with the broker, ${name}`, `Pod before the broker, ${name}`);
      const instant = added(`runner + broker at one instant, ${name}`, `runner alone, ${name}`);
      const running = added(`runner through a running broker, ${name}`, `runner alone, ${name}`);
      const nodeFloor = added(`Pod with an idle Node sidecar, ${name}`, `Pod before the broker, ${name}`);
      const anonymous = Math.max(...[...brokered, ...results[`runner + broker at one instant, ${name}`]].map((run) => run.anonymous));
      console.log(
        `${name}: the broker adds ${pod.difference.toFixed(1)} ms to a Pod's run (median of the rounds' differences ` +
          `${pod.paired.toFixed(1)} ms; target <= 20: ${pod.worst <= 20 ? "met" : "missed"}); ` +
          `through a broker already serving, ${running.difference.toFixed(1)} ms (rounds' ${running.paired.toFixed(1)} ms); ` +
          `a sidecar that only starts Node (the floor of any broker in Node) ${nodeFloor.difference.toFixed(1)} ms ` +
          `(rounds' ${nodeFloor.paired.toFixed(1)} ms); ` +
          `started at the same instant as the runner, which no kubelet does, ${instant.difference.toFixed(1)} ms (rounds' ` +
          `${instant.paired.toFixed(1)} ms); ` +
          `${median(brokered.map((run) => run.requests))} requests through it, ${median(brokered.map((run) => run.cpuMs))} ms of ` +
          `CPU in it; its memory: ` +
          `resident ${median(brokered.map((run) => run.rss)).toFixed(1)} MiB, ` +
          `of which a Pod pays beside the runner at most ${anonymous.toFixed(1)} MiB (anonymous; target <= 16: ` +
          `${anonymous <= 16 ? "met" : "missed"})`,
      );
    }
  } finally {
    await plane.stop();
    withBroker?.remove();
    beforeBroker?.remove();
  }
}
