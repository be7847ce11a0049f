#!/usr/bin/env node
// Load drill: N TerraformMachines through a full lifecycle with the Job slot limit on, on the real
// plane: bring-up (one apply each), a spec change on all (drift checks turned on: a machine's inputs
// are immutable, so the change is spec.drift, whose Jobs are background operations), teardown
// (every TerraformMachine deleted: one destroy each, finalizers released, drift still due). The
// manager (shipped wiring) runs with --max-active-jobs (low, so Jobs queue for slots) and the
// bench's completer finishes each Job --job-seconds after its Pod appeared, so Jobs overlap.
//
//   npx tsc -b && node bench/drills/load-lifecycle.mjs [--machines 2000] [--max-active-jobs 20] [--job-seconds 2]
//                                                      [--concurrency 10] [--drift-seconds 60] [--phase-timeout-seconds S]
//
// Samples every 250 ms the captf Jobs holding a slot as the manager counts them (not Complete or
// Failed, and their Pod not ended), the Jobs not yet marked Complete or Failed, and the manager's RSS. Prints per phase: its wall time,
// the peak active Jobs (must be <= --max-active-jobs), the Jobs created (exactly one apply and one destroy
// per machine), how late each machine's first drift check started after it was due (background
// operations get 80% of the slots: none may wait past N x job run / those slots + 60 s), results
// lost (0), and the manager's RSS (peak, end).
// Exits 1 when a phase does not converge or a figure is missed.
import { parseArgs } from "node:util";
import {
  drillRunner,
  inParallel,
  jobsPerOwner,
  metricSum,
  percentile,
  quietWhile,
  seconds,
  sleep,
  spawnManager,
  startDrillPlane,
  step,
  types,
} from "../lib/faults-plane.mjs";

const { values: flags } = parseArgs({
  options: {
    machines: { type: "string", default: "2000" },
    "max-active-jobs": { type: "string", default: "20" },
    "job-seconds": { type: "string", default: "2" },
    concurrency: { type: "string", default: "10" },
    "drift-seconds": { type: "string", default: "60" },
    "phase-timeout-seconds": { type: "string" },
  },
});
const N = Number(flags.machines);
const limit = Number(flags["max-active-jobs"]);
const jobSeconds = Number(flags["job-seconds"]);
const driftSeconds = Number(flags["drift-seconds"]);
const drill = "load-lifecycle";
const runner = drillRunner(drill);

await runner.run(async () => {
  const env = await startDrillPlane({ runner, drill, machines: N, jobSeconds });
  const { completer, client, namespace } = env;
  const manager = await spawnManager({
    runner,
    kubeconfig: env.plane.kubeconfigPath,
    concurrency: Number(flags.concurrency),
    managerFlags: [`--max-active-jobs=${limit}`],
  });
  step(drill, `manager ready after ${manager.readyAt - manager.spawnedAt} ms (--max-active-jobs=${limit}); ${N} machines`);

  // A Job holds its slot until its Pod ended or the Job finished (docs/manager-flags.md, --max-active-jobs).
  const active = () => [...completer.stats.jobs.values()].filter((job) => !job.completeAt && !job.failedAt && !job.podSucceededAt).length;
  const unfinished = () => [...completer.stats.jobs.values()].filter((job) => !job.completeAt && !job.failedAt).length;
  let phase = { name: "bring-up", peak: 0, unfinishedPeak: 0, rssPeak: 0 };
  const sampler = setInterval(() => {
    phase.peak = Math.max(phase.peak, active());
    phase.unfinishedPeak = Math.max(phase.unfinishedPeak, unfinished());
    phase.rssPeak = Math.max(phase.rssPeak, manager.memory()?.rss ?? 0);
  }, 250);
  runner.onCleanup(async () => clearInterval(sampler));
  const timeoutMillis = 1000 * Number(flags["phase-timeout-seconds"] ?? 300 + (3 * N * jobSeconds) / limit);
  const progress = setInterval(
    () =>
      step(
        drill,
        `  ${phase.name}: ${active()} active Jobs (peak ${phase.peak}), ${completer.stats.jobs.size} Jobs created, ` +
          `${env.provisionedAt.size} provisioned, RSS ${manager.memory()?.rss.toFixed(0)} MiB`,
      ),
    15_000,
  );
  runner.onCleanup(async () => clearInterval(progress));
  const phases = [];
  /** Runs one phase until `done()` and the Jobs are quiet for 3 s; records its figures. */
  async function runPhase(name, start, done) {
    phase = { name, peak: 0, unfinishedPeak: 0, rssPeak: 0, from: Date.now(), jobsBefore: completer.stats.jobs.size };
    await start();
    const deadline = Date.now() + timeoutMillis;
    let converged = true;
    while (!(await done())) {
      if (Date.now() > deadline) {
        converged = false;
        break;
      }
      await sleep(500);
    }
    const doneAt = Date.now();
    await quietWhile(() => completer.stats.jobs.size + completer.stats.podsCompleted, 3000, 30_000);
    phase.peak = Math.max(phase.peak, active());
    phases.push({
      ...phase,
      millis: doneAt - phase.from,
      converged,
      jobs: completer.stats.jobs.size - phase.jobsBefore,
      rssEnd: manager.memory()?.rss ?? NaN,
    });
    const p = phases.at(-1);
    step(
      drill,
      `${name} ${converged ? "done" : "NOT done"} in ${seconds(p.millis)} s: ${p.jobs} Jobs, peak active ${p.peak}, ` +
        `RSS peak ${p.rssPeak.toFixed(0)} MiB`,
    );
    return converged;
  }

  const machinePatch = (name, body) => client.patch(types.terraformMachine, namespace, name, body, "merge");
  /** Whether every machine has `count` Jobs of `op` bookkept by the manager. */
  const bookkept = (op, count) => {
    const byOwner = new Map();
    for (const job of completer.stats.jobs.values())
      if (job.op === op && job.bookkeptAt) byOwner.set(job.owner, (byOwner.get(job.owner) ?? 0) + 1);
    return env.names.every((name) => (byOwner.get(name) ?? 0) >= count);
  };
  // A phase that does not converge ends the drill: the next one's figures would mix both.
  if (
    !(await runPhase(
      "bring-up",
      async () => {},
      async () => env.provisionedAt.size === N,
    ))
  )
    return false;
  // Machines' inputs (spec.source, variables) are immutable (a changed machine is a new machine):
  // the spec change is spec.drift, which starts a background operation per machine.
  const patchedAt = Date.now();
  const driftOn = await runPhase(
    "drift on",
    () => inParallel(env.names, 16, (name) => machinePatch(name, { spec: { drift: { intervalSeconds: driftSeconds } } })),
    async () => bookkept("drift", 1),
  );
  const driftStarts = env.names.map((name) => {
    const first = Math.min(
      ...[...completer.stats.jobs.values()].filter((job) => job.owner === name && job.op === "drift").map((job) => job.createdAt),
    );
    // Due one interval (plus up to its jitter) after its apply, not before the patch.
    return first - Math.max(patchedAt, env.provisionedAt.get(name) + 1100 * driftSeconds);
  });
  const backgroundSlots = Math.floor(0.8 * limit);
  const driftBound = 1000 * (60 + (N * jobSeconds) / backgroundSlots);
  if (!driftOn) return false;
  const remaining = async () => (await client.list(types.terraformMachine, namespace, { limit: 1 })).items.length;
  await runPhase(
    "teardown",
    () => inParallel(env.names, 16, (name) => client.delete(types.terraformMachine, namespace, name)),
    async () => (await remaining()) === 0,
  );
  clearInterval(sampler);
  clearInterval(progress);
  const metrics = await manager.metrics();
  const exit = await manager.stop();

  const applies = jobsPerOwner(completer, "apply");
  const destroys = jobsPerOwner(completer, "destroy");
  const drifts = jobsPerOwner(completer, "drift");
  const otherOps = [...completer.stats.jobs.values()].filter((job) => !["apply", "destroy", "drift"].includes(job.op));
  console.log(`${drill}: ${N} TerraformMachines, --max-active-jobs=${limit}, job run ${jobSeconds} s, concurrency ${flags.concurrency}`);
  for (const p of phases) {
    console.log(
      `  ${p.name.padEnd(12)} ${p.converged ? "converged" : "NOT converged"} in ${seconds(p.millis).padStart(6)} s ` +
        `(${(N / (p.millis / 1000)).toFixed(1)} machines/s); ${p.jobs} Jobs; peak active Jobs ${p.peak} (limit ${limit}; ` +
        `${p.unfinishedPeak} not yet marked finished); manager RSS peak ${p.rssPeak.toFixed(0)} MiB, ` +
        `at its end ${p.rssEnd.toFixed(0)} MiB`,
    );
  }
  console.log(
    `  Jobs: ${applies.ofOp} apply for ${applies.owners} machines (expected ${N}: one each), ` +
      `${drifts.ofOp} drift checks for ${drifts.owners} machines, ${destroys.ofOp} destroy for ${destroys.owners} machines (expected ` +
      `${N}); other operations ${otherOps.length}; failed ${applies.failed + drifts.failed + destroys.failed}`,
  );
  const late = driftStarts.filter((millis) => millis > driftBound).length;
  // Where a background slot's time went, per drift Job: created → Pod seen → Pod ended → Job marked Complete.
  const driftJobs = [...completer.stats.jobs.values()].filter((job) => job.op === "drift");
  const p50 = (pick) =>
    seconds(
      percentile(
        driftJobs.map(pick).filter((millis) => Number.isFinite(millis)),
        0.5,
      ),
    );
  const driftPhase = phases.find((p) => p.name === "drift on");
  if (driftPhase)
    console.log(
      `  drift Jobs' turnover: ${seconds((driftPhase.millis * backgroundSlots) / Math.max(1, driftPhase.jobs))} s of a background slot ` +
        `per Job; p50 Job created → Pod seen ${p50((job) => job.podSeenAt - job.createdAt)} s, ` +
        `Pod seen → ended ${p50((job) => job.podSucceededAt - job.podSeenAt)} s, ` +
        `Pod ended → Job Complete ${p50((job) => job.completeAt - job.podSucceededAt)} s`,
    );
  console.log(
    `  background operations (drift, at most ${backgroundSlots} of ${limit} slots): ` +
      `each machine's first drift check started p50 ${seconds(percentile(driftStarts, 0.5))} s, ` +
      `max ${seconds(Math.max(...driftStarts))} s after it was due; bound ${seconds(driftBound)} s (N x job run / background slots + ` +
      `60 s): ${late} late`,
  );
  console.log(
    `  results lost: ${N - env.provisionedAt.size} machines never provisioned; ` +
      `Job completer errors ` +
      `${completer.stats.errors.length}${completer.stats.errors.length ? ` (first: ${completer.stats.errors[0]})` : ""}`,
  );
  console.log(
    `  manager: reconcile errors ${metricSum(metrics, "controller_runtime_reconcile_errors_total")}; ` +
      `waits for a Job slot ${metricSum(metrics, "controller_runtime_reconcile_total", 'result="requeue_after"')} requeues; ` +
      `exit ${JSON.stringify(exit)}; RSS peak over the drill ${Math.max(...phases.map((p) => p.rssPeak)).toFixed(0)} MiB`,
  );
  const peak = Math.max(...phases.map((p) => p.peak));
  const ok =
    phases.every((p) => p.converged) &&
    peak <= limit &&
    applies.ofOp === N &&
    destroys.ofOp === N &&
    otherOps.length === 0 &&
    applies.failed + drifts.failed + destroys.failed === 0 &&
    late === 0;
  if (peak > limit) console.log(`  MISSED: peak active Jobs ${peak} > --max-active-jobs ${limit}`);
  console.log(
    JSON.stringify({
      drill,
      machines: N,
      maxActiveJobs: limit,
      peakActiveJobs: peak,
      phases: Object.fromEntries(phases.map((p) => [p.name, Number(seconds(p.millis))])),
      rssPeakMiB: Math.round(Math.max(...phases.map((p) => p.rssPeak))),
      ok,
    }),
  );
  return ok;
});
