#!/usr/bin/env node
// Fault drill: kube-apiserver stopped and restarted mid-pass, then etcd compacted under load so
// the manager's watches resume from a compacted resourceVersion (410 Gone) and its informers relist.
// N machines (bench fixtures), the manager (shipped wiring) bringing them up, Jobs completed by the
// bench's completer after --job-seconds:
//
//  1. once a quarter is provisioned: kube-apiserver SIGTERMed, down for --down-seconds, started
//     again with its own command line (same port, same etcd, same certificates);
//  2. once half is provisioned: etcd compacted at its current revision (its v3 HTTP gateway:
//     /v3/kv/compaction, physical), then kube-apiserver restarted again, so every watch of the
//     manager (and kube-controller-manager) resumes from a revision etcd no longer has.
//
//   npx tsc -b && node bench/drills/faults-apiserver.mjs [--machines 100] [--down-seconds 5] [--job-seconds 1]
//
// Prints what each fault did (the manager's captf_informer_watch_restarts_total by reason after
// each: `gone` counts the 410 relists, which must be > 0 after the compaction), the Jobs created
// against the machines (exactly one apply each), the results lost (0) and the time to converge
// after the last restart. Exits 1 when any of these is missed.
import { spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { get } from "node:https";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  drillRunner,
  jobsPerOwner,
  metricSum,
  quietWhile,
  seconds,
  sleep,
  spawnManager,
  startDrillPlane,
  step,
} from "../lib/faults-plane.mjs";

const { values: flags } = parseArgs({
  options: {
    machines: { type: "string", default: "100" },
    "down-seconds": { type: "string", default: "5" },
    "job-seconds": { type: "string", default: "1" },
  },
});
const N = Number(flags.machines);
const downMillis = 1000 * Number(flags["down-seconds"]);
const drill = "faults-apiserver";
const runner = drillRunner(drill);

/** The pid and command line of the plane's kube-apiserver (found by its temp dir, from /proc). */
function apiserverProcess(dir) {
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    let argv;
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean);
    } catch {
      continue;
    }
    if (argv[0]?.endsWith("/kube-apiserver") && argv.some((arg) => arg.includes(dir))) return { pid: Number(entry), argv };
  }
  throw new Error("the plane's kube-apiserver is not running");
}

const waitFor = async (what, timeoutMillis, check) => {
  const deadline = Date.now() + timeoutMillis;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds(timeoutMillis)} s`);
    await sleep(100);
  }
};

await runner.run(async () => {
  const env = await startDrillPlane({ runner, drill, machines: N, jobSeconds: Number(flags["job-seconds"]) });
  const { plane } = env;
  // fetch() cannot take a CA: the probe goes through node's https with the plane's certificate.
  const ca = readFileSync(plane.caFile);
  const probe = () =>
    new Promise((resolve) => {
      const request = get(
        `${plane.server}/readyz`,
        { ca, headers: { authorization: `Bearer ${plane.token}` }, timeout: 2000 },
        (response) => {
          response.resume();
          resolve(response.statusCode === 200);
        },
      );
      request.on("error", () => resolve(false));
      request.on("timeout", () => request.destroy());
    });
  const restarted = [];
  runner.onCleanup(async () => {
    for (const child of restarted) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
  });
  /** Stops the running kube-apiserver, waits `down` ms, starts it again with its own argv; returns the outage in ms. */
  async function restartApiserver(down, beforeStart = async () => {}) {
    const { pid, argv } = apiserverProcess(plane.dir);
    const from = Date.now();
    process.kill(pid, "SIGTERM");
    // Gone, or a zombie its parent (the testkit's handle in this process) has not reaped yet.
    const exited = async () => {
      try {
        return / Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8").slice(readFileSync(`/proc/${pid}/stat`, "utf8").lastIndexOf(")")));
      } catch {
        return true;
      }
    };
    const killTimer = setTimeout(() => exited().then((gone) => gone || process.kill(pid, "SIGKILL")), 20_000);
    await waitFor("kube-apiserver to exit", 40_000, exited);
    clearTimeout(killTimer);
    stopMillis.push(Date.now() - from);
    await sleep(down);
    await beforeStart();
    const fd = openSync(join(plane.dir, "kube-apiserver.log"), "a");
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", fd, fd] });
    closeSync(fd);
    restarted.push(child);
    await waitFor("kube-apiserver ready again", 120_000, probe);
    return Date.now() - from;
  }
  const etcdUrl = /--etcd-servers=(\S+)/.exec(apiserverProcess(plane.dir).argv.join(" "))[1];
  const etcd = (path, body) =>
    fetch(`${etcdUrl}${path}`, { method: "POST", body: JSON.stringify(body) }).then(async (r) => ({
      status: r.status,
      body: await r.json(),
    }));

  const manager = await spawnManager({ runner, kubeconfig: plane.kubeconfigPath });
  step(drill, `manager ready after ${manager.readyAt - manager.spawnedAt} ms; ${N} machines to bring up`);
  const restarts = async () => {
    const text = await manager.metrics();
    return Object.fromEntries(
      ["gone", "error", "inactive", "relist", "ended"].map((reason) => [
        reason,
        metricSum(text, "captf_informer_watch_restarts_total", `reason="${reason}"`),
      ]),
    );
  };
  const faults = [];
  const stopMillis = [];

  await waitFor("a quarter provisioned", 120_000 + 500 * N, async () => env.provisionedAt.size >= N / 4);
  const before1 = { provisioned: env.provisionedAt.size, restarts: await restarts() };
  const outage1 = await restartApiserver(downMillis);
  await sleep(3000); // the informers reconnect with backoff; then count
  faults.push({
    what: `kube-apiserver stopped ${seconds(downMillis)} s and restarted`,
    at: before1.provisioned,
    outageMillis: outage1,
    before: before1.restarts,
    after: await restarts(),
  });
  step(drill, `fault 1 done: ${faults[0].what}, outage ${seconds(outage1)} s; ${env.provisionedAt.size}/${N} provisioned`);

  await waitFor("half provisioned", 120_000 + 500 * N, async () => env.provisionedAt.size >= N / 2);
  const before2 = { provisioned: env.provisionedAt.size, restarts: await restarts() };
  let compactedAt;
  const outage2 = await restartApiserver(0, async () => {
    const revision = Number((await etcd("/v3/kv/range", { key: Buffer.from("/").toString("base64") })).body.header.revision);
    const compacted = await etcd("/v3/kv/compaction", { revision, physical: true });
    if (compacted.status !== 200) throw new Error(`etcd compaction at ${revision}: ${compacted.status} ${JSON.stringify(compacted.body)}`);
    compactedAt = revision;
  });
  await sleep(3000);
  faults.push({
    what: `etcd compacted at revision ${compactedAt}, kube-apiserver restarted`,
    at: before2.provisioned,
    outageMillis: outage2,
    before: before2.restarts,
    after: await restarts(),
  });
  step(drill, `fault 2 done: ${faults[1].what}; ${env.provisionedAt.size}/${N} provisioned`);
  const lastFaultAt = Date.now();

  const converged = await Promise.race([env.allProvisioned().then(() => true), sleep(120_000 + 500 * N).then(() => false)]);
  const provisionedMillis = Date.now() - lastFaultAt;
  const quiet = await quietWhile(() => env.completer.stats.jobs.size + env.completer.stats.podsCompleted, 5000, 60_000);
  const final = await restarts();
  const text = await manager.metrics();
  const exit = await manager.stop();

  const jobs = jobsPerOwner(env.completer);
  const lost = N - env.provisionedAt.size;
  const delta = (after, before) =>
    Object.entries(after)
      .filter(([k]) => after[k] - before[k] > 0)
      .map(([k, v]) => `${k} +${v - before[k]}`)
      .join(", ") || "none";
  console.log(`${drill}: ${N} TerraformMachines, job run ${flags["job-seconds"]} s, kube ${plane.server}`);
  console.log(`  kube-apiserver's own graceful stop took ${stopMillis.map((m) => seconds(m)).join(" s, ")} s (SIGKILL after 20 s)`);
  for (const fault of faults)
    console.log(
      `  ${fault.what} at ${fault.at}/${N} provisioned: outage ${seconds(fault.outageMillis)} s; the manager's watch restarts since: ` +
        `${delta(fault.after, fault.before)}`,
    );
  console.log(
    `  watch restarts over the drill (captf_informer_watch_restarts_total): ${Object.entries(final)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  );
  console.log(
    `  Jobs created: ${jobs.jobs} for ${N} machines: ${jobs.ofOp} apply Jobs for ${jobs.owners} machines; ` +
      `duplicates ${jobs.duplicated.length}; other operations ${jobs.otherOps.length}; failed ${jobs.failed}`,
  );
  console.log(
    `  results lost: ${lost} machines not provisioned; ` +
      `Job completer errors ` +
      `${env.completer.stats.errors.length}${env.completer.stats.errors.length ? ` (first: ${env.completer.stats.errors[0]})` : ""}`,
  );
  console.log(
    `  time to converge after the last restart: all provisioned ${converged ? seconds(provisionedMillis) : "NOT"} s; ` +
      `the manager's reconcile errors ${metricSum(text, "controller_runtime_reconcile_errors_total")}; ` +
      `it exited ${JSON.stringify(exit)}`,
  );
  const relisted = faults[1].after.gone - faults[1].before.gone;
  const ok = converged && quiet && lost === 0 && jobs.duplicated.length === 0 && jobs.failed === 0 && jobs.owners === N && relisted > 0;
  if (relisted === 0) console.log("  MISSED: no 410 relist counted after the compaction");
  console.log(
    JSON.stringify({
      drill,
      machines: N,
      goneRelists: final.gone,
      duplicates: jobs.duplicated.length,
      lost,
      convergeSeconds: Number(seconds(provisionedMillis)),
      ok,
    }),
  );
  return ok;
});
