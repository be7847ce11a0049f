#!/usr/bin/env node
// Fault drill: a Job's Pod deleted mid-apply, on the real plane (no kubelet: the bench's completer
// stands in for one and leaves the chosen Pod running). N machines come up; the first apply Pod of
// machine m-0 is held running, then deleted, as a node drain or an operator would; kube-controller-
// manager's Job controller then fails that Job (captf's Jobs retry nothing themselves).
//
//   npx tsc -b && node bench/drills/faults-pod.mjs [--machines 5]
//
// Prints what the manager made of it: the interrupted machine's Events (JobInterrupted: 1, JobFailed:
// 0, as the e2e asserts with a real runner), its apply Jobs (the deleted one did not succeed, exactly
// one later one did), one apply Job for each other machine, results lost (0), the time to converge
// after the deletion. Exits 1 when any of these is missed. About 30 s here: a regression test.
import { parseArgs } from "node:util";
import { loadDependency } from "../lib/controller-packages.mjs";
import { drillRunner, jobsPerOwner, seconds, sleep, spawnManager, startDrillPlane, step } from "../lib/faults-plane.mjs";

const { values: flags } = parseArgs({ options: { machines: { type: "string", default: "5" } } });
const N = Number(flags.machines);
const { labels } = await loadDependency("@captf/contract/api");
const drill = "faults-pod";
const runner = drillRunner(drill);
const eventType = { group: "", version: "v1", plural: "events", kind: "Event", namespaced: true };
const podType = { group: "", version: "v1", plural: "pods", kind: "Pod", namespaced: true };

await runner.run(async () => {
  const victim = "m-0";
  let heldPod;
  const env = await startDrillPlane({
    runner,
    drill,
    machines: N,
    // The victim's first Pod is held (and remembered); every later one completes.
    hold: (pod) => {
      if (pod.metadata.labels?.[labels.ownerName] !== victim) return false;
      heldPod ??= pod;
      return heldPod.metadata.uid === pod.metadata.uid;
    },
  });
  const manager = await spawnManager({ runner, kubeconfig: env.plane.kubeconfigPath });
  step(drill, `manager ready; ${N} machines, ${victim}'s apply Pod to be deleted`);
  const deadline = Date.now() + 180_000;
  while (!heldPod && Date.now() < deadline) await sleep(100);
  if (!heldPod) throw new Error(`${victim}'s apply Pod never appeared`);
  const interruptedJob = heldPod.metadata.labels["job-name"] ?? heldPod.metadata.labels["batch.kubernetes.io/job-name"];
  await sleep(1000); // mid-apply: the runner would be running
  const deletedAt = Date.now();
  await env.client.delete(podType, env.namespace, heldPod.metadata.name);
  step(drill, `deleted Pod ${heldPod.metadata.name} of Job ${interruptedJob}`);
  const converged = await Promise.race([env.allProvisioned().then(() => true), sleep(180_000).then(() => false)]);
  const convergeMillis = Date.now() - deletedAt;
  await sleep(3000); // the recorder's events are written asynchronously
  const events = (await env.client.list(eventType, env.namespace)).items.filter(
    (event) => event.involvedObject?.name === victim && event.message?.includes(interruptedJob),
  );
  const count = (reason) => events.filter((event) => event.reason === reason).reduce((n, event) => n + (event.count ?? 1), 0);
  await manager.stop();

  const jobs = [...env.completer.stats.jobs.entries()];
  const victimApplies = jobs.filter(([, job]) => job.owner === victim && job.op === "apply");
  const interrupted = env.completer.stats.jobs.get(interruptedJob);
  const laterSucceeded = victimApplies.filter(([name, job]) => name !== interruptedJob && job.completeAt).length;
  const others = jobsPerOwner({ stats: { jobs: new Map(jobs.filter(([, job]) => job.owner !== victim)) } });
  const lost = N - env.provisionedAt.size;
  console.log(`${drill}: ${N} TerraformMachines; ${victim}'s apply Pod deleted 1 s after it appeared`);
  console.log(
    `  ${victim}: Events about Job ${interruptedJob}: JobInterrupted ${count("JobInterrupted")}, JobFailed ${count("JobFailed")}; ` +
      `its apply Jobs ${victimApplies.length} (the deleted one ${interrupted?.completeAt ? "SUCCEEDED" : "did not succeed"}, ` +
      `${laterSucceeded} later one(s) succeeded)`,
  );
  console.log(`  other machines: ${others.ofOp} apply Jobs for ${others.owners} machines, duplicates ${others.duplicated.length}`);
  console.log(`  results lost: ${lost}; time to converge after the deletion ${converged ? seconds(convergeMillis) : "NOT"} s`);
  const ok =
    converged &&
    lost === 0 &&
    count("JobInterrupted") === 1 &&
    count("JobFailed") === 0 &&
    !interrupted?.completeAt &&
    laterSucceeded === 1 &&
    others.owners === N - 1 &&
    others.duplicated.length === 0;
  console.log(JSON.stringify({ drill, machines: N, interrupted: count("JobInterrupted"), failed: count("JobFailed"), lost, ok }));
  return ok;
});
