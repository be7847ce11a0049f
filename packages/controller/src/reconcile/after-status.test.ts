// The after-status work on the testkit's fake API server: the finished Jobs marked bookkept and the history beyond its limit pruned,
// Provisioned on the pass that provisions, and the result's requeue the sooner of the pass's and the credentials'.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import type { V1Job } from "@kubernetes/client-node";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { afterStatus } from "./after-status.js";
import { observeJobs } from "./observe-jobs.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { machineJob, reconcilePass } from "./reconcile-pass.test-support.js";

const now = Date.parse("2026-12-07T10:00:00Z");

describe("afterStatus", () => {
  it("marks the finished Jobs bookkept, prunes the history beyond its limit, and records Provisioned once provisioned", async () => {
    const server = new FakeObjects();
    for (let attempt = 1; attempt <= 3; attempt++)
      server.seed(
        builtinTypes.job,
        passNamespace,
        machineJob(`m-apply-${attempt}`, "apply", { condition: "Complete", at: now - (4 - attempt) * 60_000 }),
      );
    const jobs = await observeJobs({ client: server.client }, passNamespace, passOwner, now);
    const newest = jobs.filter((job) => job.name === "m-apply-3");
    const pass = reconcilePass(server.client, {
      now,
      scope: { provisioned: true },
      facts: {
        jobs,
        toMark: newest,
        jobPolicy: { successfulJobsHistoryLimit: 1 },
        written: { conditions: [] },
        action: "UpToDate",
        requeueAfterMs: 60_000,
      },
    });
    pass.facts.credentials = { conditions: [], ready: true, requeueAfterMs: 10_000 };
    expect(await afterStatus(pass)).toEqual({ action: "UpToDate", requeueAfterMs: 10_000 });
    const marked = (await server.get(builtinTypes.job, passNamespace, "m-apply-3")) as V1Job;
    expect(marked.metadata?.annotations?.[annotations.bookkept]).toBe("true");
    expect(server.writes).toEqual(["patch jobs/m-apply-3", "delete jobs/m-apply-1", "delete jobs/m-apply-2"]);
    expect(pass.recorded).toEqual(["Provisioned"]);
  });

  it("without a requeue of its own or the credentials', the result has none", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now, facts: { written: { conditions: [] }, action: "Paused" } });
    expect(await afterStatus(pass)).toEqual({ action: "Paused" });
    expect(pass.recorded).toEqual([]);
  });
});
