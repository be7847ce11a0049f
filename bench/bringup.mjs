#!/usr/bin/env node
// The demo's bring-up on the e2e management plane (Cluster API's core manager, captf installed from
// its manifests, the chroot kubelet running every Job): wall time from applying the demo to Ready as
// Cluster API reports it, and the Jobs it took, per object.
//
// Baseline, from the same run: the Jobs' own critical path (the cluster's apply, then the slowest
// machine or pool apply, from each Job's start to its completion). What the bring-up takes beyond it
// is captf's and Cluster API's reaction time plus the chroot kubelet's queue (2 Pods at a time).
// Target (issue 11): Ready in 60 s or less with the tools built; Jobs = one per object plus at most
// one re-apply of the cluster.
//
//   npx tsc -b && node bench/bringup.mjs [--runs 1]
//
// Needs root (the chroot kubelet) and the tools of tools/install.sh (etcd, tofu, kube, capi).
import { parseArgs } from "node:util";
import { applyObjects } from "../e2e/dist/apply.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables } from "../e2e/dist/demo-objects.js";
import { startManagementPlane } from "../e2e/dist/management-plane.js";
import { listCaptfJobs, listEventsOfReason, readProgress } from "../e2e/dist/progress.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "1" } } });
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";
const ownerKindLabel = "captf.infrastructure.cluster.x-k8s.io/owner-kind";
const ownerNameLabel = "captf.infrastructure.cluster.x-k8s.io/owner-name";

for (let run = 1; run <= Number(values.runs); run++) {
  const planeStarted = Date.now();
  const plane = await startManagementPlane({ log: (line) => (/: done in /.test(line) ? console.log(`  ${line}`) : undefined) });
  try {
    console.log(`run ${run}: plane up in ${((Date.now() - planeStarted) / 1000).toFixed(1)} s`);
    const secrets = { credential: "bench-credential", variable: "bench-variable", bootstrap: "bench-bootstrap" };
    const started = Date.now();
    await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
    for (;;) {
      if ((await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).ready) break;
      if (Date.now() - started > 600_000) throw new Error("not Ready within 600 s");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const seconds = (Date.now() - started) / 1000;

    const jobs = await listCaptfJobs(plane.kubeConfig, demoNamespace);
    const perObject = new Map();
    const durations = { cluster: [], other: [] };
    for (const job of jobs) {
      const labels = job.metadata.labels;
      const key = `${labels[ownerKindLabel]}/${labels[ownerNameLabel]}`;
      perObject.set(key, [...(perObject.get(key) ?? []), labels[opLabel]]);
      const start = job.status?.startTime ? new Date(job.status.startTime).getTime() : undefined;
      const end = job.status?.completionTime ? new Date(job.status.completionTime).getTime() : undefined;
      if (start && end) (labels[ownerKindLabel] === "TerraformCluster" ? durations.cluster : durations.other).push((end - start) / 1000);
    }
    const objects = perObject.size;
    const criticalPath = (durations.cluster[0] ?? 0) + Math.max(0, ...durations.other);
    console.log(
      `run ${run}: apply → Ready ${seconds.toFixed(1)} s (target ≤ 60 s); baseline, the Jobs' critical path: ` +
        `${criticalPath.toFixed(1)} s (${(seconds / Math.max(criticalPath, 0.001)).toFixed(2)}x)`,
    );
    console.log(`run ${run}: ${jobs.length} Jobs for ${objects} objects (target ≤ ${objects + 1})`);
    for (const [object, operations] of [...perObject].sort()) console.log(`  ${object}: ${operations.length} (${operations.join(", ")})`);
    // Why each Job started, as the manager's JobCreated events say: an object run twice shows its reason here.
    for (const event of await listEventsOfReason(plane.kubeConfig, demoNamespace, "JobCreated")) {
      console.log(`    ${event.involvedObject.kind}/${event.involvedObject.name}: ${event.message}`);
    }
    console.log(
      JSON.stringify({ run, seconds, jobs: jobs.length, objects, criticalPathSeconds: criticalPath, planeSeconds: plane.startSteps }),
    );
  } finally {
    await plane.stop();
  }
}
