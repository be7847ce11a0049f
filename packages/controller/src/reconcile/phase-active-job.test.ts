// The stuck-Job phase on the testkit's fake API server: a running Job without its per-run Secret whose inputs changed is deleted and
// the pass ends there (its status written); one whose inputs still render the same hash gets its Secret; a healthy Job goes on.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { runSecretName } from "../jobs/build-job.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { observeJobs } from "./observe-jobs.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcileActiveJob } from "./phase-active-job.js";
import { machineJob, reconcilePass } from "./reconcile-pass.test-support.js";
import type { InputsOutcome } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const rendered = (hash: string): InputsOutcome => ({
  kind: "ready",
  rendered: { root: { "main.tf.json": "{}", "terraform.tfvars.json": "{}" }, hash, approvalHash: hash },
});

/** A running apply Job of inputs hash h2:old (no per-run Secret unless `withSecret`), its Pod running unless `withoutPod`. */
async function running(withSecret: boolean) {
  const server = new FakeObjects();
  const job = machineJob("m-apply-1", "apply");
  job.metadata!.annotations = { [annotations.inputsHash]: "h2:old" };
  server.seed(builtinTypes.job, passNamespace, job);
  server.seed(builtinTypes.pod, passNamespace, {
    metadata: { name: "m-apply-1-pod", labels: { "job-name": "m-apply-1" } },
    status: { phase: "Running" },
  } as never);
  if (withSecret) server.seed(builtinTypes.secret, passNamespace, { metadata: { name: runSecretName("m-apply-1") } });
  const jobs = await observeJobs({ client: server.client }, passNamespace, passOwner, now);
  return { server, jobs };
}

describe("reconcileActiveJob", () => {
  it("goes on without a running Job", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now });
    expect(await reconcileActiveJob(pass)).toEqual({ kind: "continue" });
  });

  it("goes on while the running Job has its Secret and its Pod", async () => {
    const { server, jobs } = await running(true);
    const pass = reconcilePass(server.client, { now, facts: { jobs, active: jobs[0], inputs: rendered("h2:old"), currentHash: "h2:old" } });
    expect(await reconcileActiveJob(pass)).toEqual({ kind: "continue" });
    expect(server.writes).toEqual([]);
  });

  it("gives a Job left without its per-run Secret the Secret, while the inputs render its hash", async () => {
    const { server, jobs } = await running(false);
    const pass = reconcilePass(server.client, { now, facts: { jobs, active: jobs[0], inputs: rendered("h2:old"), currentHash: "h2:old" } });
    expect(await reconcileActiveJob(pass)).toEqual({ kind: "continue" });
    expect(server.writes).toEqual([`create secrets/${runSecretName("m-apply-1")}`]);
  });

  it("deletes it once the inputs changed, and ends the pass with its status and an immediate requeue", async () => {
    const { server, jobs } = await running(false);
    const pass = reconcilePass(server.client, { now, facts: { jobs, active: jobs[0], inputs: rendered("h2:new"), currentHash: "h2:new" } });
    const step = await reconcileActiveJob(pass);
    expect(step).toEqual({
      kind: "end",
      result: { action: "deleted stuck Job m-apply-1: its per-run Secret is missing and the inputs changed", requeueAfterMs: 0 },
    });
    expect(server.writes).toEqual(["delete jobs/m-apply-1"]);
    expect(pass.outcome.active).toBeUndefined();
    expect(pass.recorded).toEqual(["StuckJobDeleted"]);
  });
});
