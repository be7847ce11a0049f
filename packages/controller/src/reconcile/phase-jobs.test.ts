// The Jobs phase on the testkit's fake API server: the object's Jobs observed by label, the finished ones bookkept (their per-run
// Secret deleted, an event) and kept on the pass to be marked after the status.
import { describe, expect, it } from "@jest/globals";
import { runSecretName } from "../jobs/build-job.js";
import { annotations } from "@captf/contract/api";
import type { V1Secret } from "@kubernetes/client-node";
import { clusterAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { durableInputsSecretName, type DurableInputs } from "./durable-inputs.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcileJobs } from "./phase-jobs.js";
import { machineJob, reconcilePass } from "./reconcile-pass.test-support.js";

const now = Date.parse("2026-12-07T10:00:00Z");

describe("reconcileJobs", () => {
  it("observes the object's Jobs and bookkeeps those finished since the last pass", async () => {
    const server = new FakeObjects();
    server.seed(builtinTypes.job, passNamespace, machineJob("m-apply-1", "apply", { condition: "Complete", at: now - 60_000 }));
    server.seed(builtinTypes.job, passNamespace, machineJob("m-refresh-1", "refresh"));
    server.seed(builtinTypes.secret, passNamespace, { metadata: { name: runSecretName("m-apply-1") } });
    const pass = reconcilePass(server.client, { now });
    expect(await reconcileJobs(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.jobs.map((job) => [job.name, job.outcome]).sort()).toEqual([
      ["m-apply-1", "succeeded"],
      ["m-refresh-1", undefined],
    ]);
    expect(pass.facts.toMark.map((job) => job.name)).toEqual(["m-apply-1"]);
    expect(server.writes).toContain(`delete secrets/${runSecretName("m-apply-1")}`);
    expect(pass.recorded).toEqual(["JobSucceeded"]);
  });

  it("has nothing to bookkeep without Jobs", async () => {
    const server = new FakeObjects();
    const pass = reconcilePass(server.client, { now });
    await reconcileJobs(pass);
    expect(pass.facts.jobs).toEqual([]);
    expect(pass.facts.toMark).toEqual([]);
    expect(server.writes).toEqual([]);
  });

  it("a cluster's apply Job the status recorded running and the API server no longer has: interrupted, on the durable inputs", async () => {
    const server = new FakeObjects();
    const durableName = durableInputsSecretName("cluster", passOwner.name);
    server.seed(builtinTypes.secret, passNamespace, { metadata: { name: durableName } });
    const pass = reconcilePass(server.client, {
      now,
      adapter: clusterAdapter,
      object: { status: { conditions: [], activeJob: { name: "m-apply-2", operation: "apply" } as never } },
    });
    pass.durable = { variables: {}, unpullableImages: [] } as unknown as DurableInputs;
    await reconcileJobs(pass);
    expect(pass.scope.vanishedApply).toBe("m-apply-2");
    const durable = (await server.get(builtinTypes.secret, passNamespace, durableName)) as V1Secret;
    expect(durable.metadata?.annotations?.[annotations.interruptedApply]).toBe("m-apply-2");
    expect(pass.durable.interruptedApply).toBe("m-apply-2");
    expect(pass.recorded).toEqual(["JobInterrupted"]);
  });
});
