#!/usr/bin/env node
// Fault drill: the manager SIGKILLed at random moments during a bring-up, on the real plane.
// N machines (bench fixtures) exist before the first manager starts; the manager (the shipped
// wiring, bench/lib/controller-manager.mjs) is spawned, SIGKILLed after a random delay (from when it serves:
// some kills land while it syncs its caches, most while it creates Jobs and bookkeeps their
// results), and spawned again, `--kills` times; then a last manager runs until every machine
// is provisioned and no more Jobs appear. Jobs complete after --job-seconds (the bench's
// completer: state Secret + Pod status), so kills also land between a Job's end and its bookkeeping;
// the managers run with --max-active-jobs, so the bring-up outlasts the kills (each kill must land
// during it) and Jobs wait for slots across restarts.
//
//   npx tsc -b && node bench/drills/faults-kill.mjs [--machines 200] [--kills 20] [--max-kill-seconds 4]
//                                                   [--job-seconds 5] [--max-active-jobs 10] [--seed 1]
//
// Prints the kills (when, what was provisioned then), the Jobs created against the machines (must
// be exactly one apply Job each: no duplicates, no other operation), the results lost (machines
// not provisioned at the end: must be 0; failed Jobs: must be 0) and the time to converge (from
// the last kill's restart to all provisioned and quiet). Exits 1 when any of these is missed.
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
    machines: { type: "string", default: "200" },
    kills: { type: "string", default: "20" },
    "max-kill-seconds": { type: "string", default: "4" },
    "job-seconds": { type: "string", default: "5" },
    "max-active-jobs": { type: "string", default: "10" },
    seed: { type: "string", default: "1" },
  },
});
const N = Number(flags.machines);
const kills = Number(flags.kills);
const maxKillMillis = 1000 * Number(flags["max-kill-seconds"]);
const managerFlags = [`--max-active-jobs=${Number(flags["max-active-jobs"])}`];
// A small seeded generator: a run can be repeated kill for kill.
let seed = Number(flags.seed) >>> 0 || 1;
const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;

const drill = "faults-kill";
const runner = drillRunner(drill);
await runner.run(async () => {
  const env = await startDrillPlane({ runner, drill, machines: N, jobSeconds: Number(flags["job-seconds"]) });
  const kubeconfig = env.plane.kubeconfigPath;
  const startedAt = Date.now();
  const killLog = [];
  for (let k = 1; k <= kills; k++) {
    const manager = await spawnManager({ runner, kubeconfig, waitReady: false, managerFlags });
    // Counted from when it serves (its informers start then): a kill while node loads modules proves nothing.
    if (!(await manager.serving())) throw new Error(`the manager exited before serving; its log ends:\n${manager.tail()}`);
    const delay = Math.round(random() * maxKillMillis);
    await sleep(delay);
    const ready = await manager.readyNow();
    manager.child.kill("SIGKILL");
    const exit = await manager.exited;
    killLog.push({
      k,
      delay,
      serving: ready,
      provisioned: env.provisionedAt.size,
      jobs: env.completer.stats.jobs.size,
      exit: exit.signal ?? exit.code,
    });
    step(
      drill,
      `kill ${k}/${kills} after ${delay} ms (${ready ? "ready" : "syncing"}): ${env.provisionedAt.size}/${N} provisioned, ` +
        `${env.completer.stats.jobs.size} Jobs`,
    );
  }
  const lastKillAt = Date.now();
  const manager = await spawnManager({ runner, kubeconfig, managerFlags });
  step(drill, `last manager ready after ${manager.readyAt - manager.spawnedAt} ms; waiting for ${N} provisioned`);
  const timeoutMillis = 120_000 + 500 * N;
  const converged = await Promise.race([env.allProvisioned().then(() => true), sleep(timeoutMillis).then(() => false)]);
  const provisionedMillis = Date.now() - lastKillAt;
  // Converged means quiet too: no Job created or completed for 5 s after the last provisioned.
  const quiet = await quietWhile(() => env.completer.stats.jobs.size + env.completer.stats.podsCompleted, 5000, 60_000);
  const convergeMillis = Date.now() - lastKillAt - (quiet ? 5000 : 0);
  const metrics = await manager.metrics();
  await manager.stop();

  const jobs = jobsPerOwner(env.completer);
  const lost = N - env.provisionedAt.size;
  const killsDuringBringUp = killLog.filter((k) => k.provisioned < N).length;
  console.log(
    `${drill}: ${N} TerraformMachines, ${kills} SIGKILLs of the manager (each 0-${seconds(maxKillMillis)} s after it serves), ` +
      `job run ${flags["job-seconds"]} s, --max-active-jobs=${flags["max-active-jobs"]}, seed ${flags.seed}`,
  );
  console.log(
    `  kills: ${kills} survived (${killLog.filter((k) => k.serving).length} once ready, ` +
      `${killLog.filter((k) => !k.serving).length} while its caches synced; ${killsDuringBringUp} before all were provisioned)`,
  );
  console.log(`  provisioned at each kill: ${killLog.map((k) => k.provisioned).join(" ")}`);
  const duplicatedNote = jobs.duplicated.length
    ? ` (${jobs.duplicated
        .slice(0, 5)
        .map(([o, n]) => `${o} x${n}`)
        .join(", ")})`
    : "";
  const otherOpsNote = jobs.otherOps.length ? ` (${jobs.otherOps.slice(0, 5).join(", ")})` : "";
  console.log(
    `  Jobs created: ${jobs.jobs} for ${N} machines: ${jobs.ofOp} apply Jobs for ${jobs.owners} machines; ` +
      `duplicates ${jobs.duplicated.length}${duplicatedNote}; ` +
      `other operations ${jobs.otherOps.length}${otherOpsNote}; failed ${jobs.failed}`,
  );
  console.log(
    `  results lost: ${lost} machines not provisioned; ` +
      `Job completer errors ` +
      `${env.completer.stats.errors.length}${env.completer.stats.errors.length ? ` (first: ${env.completer.stats.errors[0]})` : ""}`,
  );
  console.log(
    `  time to converge after the last kill: ` +
      `all provisioned ${converged ? seconds(provisionedMillis) : `NOT within ${seconds(timeoutMillis)}`} s, ` +
      `quiet ${quiet ? seconds(convergeMillis) : "NOT"} s (last manager's start and cache sync ` +
      `${seconds(manager.readyAt - manager.spawnedAt)} s); whole drill ${seconds(Date.now() - startedAt)} s`,
  );
  console.log(`  last manager: reconcile errors ${metricSum(metrics, "controller_runtime_reconcile_errors_total")}`);
  // Every kill must land during the bring-up: one after it is a restart over settled machines.
  const ok =
    converged &&
    quiet &&
    lost === 0 &&
    jobs.duplicated.length === 0 &&
    jobs.otherOps.length === 0 &&
    jobs.failed === 0 &&
    jobs.owners === N &&
    killsDuringBringUp === kills;
  if (killsDuringBringUp < kills)
    console.log(
      `  MISSED: ${kills - killsDuringBringUp} kills after all were provisioned (lengthen the bring-up: --job-seconds, --max-active-jobs)`,
    );
  console.log(
    JSON.stringify({
      drill,
      machines: N,
      kills,
      killsDuringBringUp,
      jobs: jobs.jobs,
      duplicates: jobs.duplicated.length,
      lost,
      convergeSeconds: Number(seconds(convergeMillis)),
      ok,
    }),
  );
  return ok;
});
