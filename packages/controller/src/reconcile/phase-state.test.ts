// The state phase on the testkit's fake API server: the running Job found, the state read (absent, or lost once something was
// applied), and the state lock read only while no Job runs.
import { describe, expect, it } from "@jest/globals";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { passNamespace } from "./phase-pass.test-support.js";
import { reconcileState } from "./phase-state.js";
import { machineJob, reconcilePass } from "./reconcile-pass.test-support.js";
import { observeJobs } from "./observe-jobs.js";
import { passOwner } from "./phase-pass.test-support.js";

const now = Date.parse("2026-12-07T10:00:00Z");

describe("reconcileState", () => {
  it("finds the running Job and reads an absent state of a new object as absent, not lost", async () => {
    const server = new FakeObjects();
    server.seed(builtinTypes.job, passNamespace, machineJob("m-apply-1", "apply"));
    const jobs = await observeJobs({ client: server.client }, passNamespace, passOwner, now);
    const pass = reconcilePass(server.client, { now, facts: { jobs } });
    expect(await reconcileState(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.active?.name).toBe("m-apply-1");
    expect(pass.facts.state).toEqual({ kind: "absent" });
    expect(pass.facts.stateLost).toBe(false);
    expect(pass.facts.lock).toEqual({ kind: "free" });
    expect(pass.recorded).toEqual([]);
  });

  it("an absent state of a provisioned object is lost: StateLost, and nothing runs on it", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now, facts: { wasProvisioned: true } });
    await reconcileState(pass);
    expect(pass.facts.active).toBeUndefined();
    expect(pass.facts.stateLost).toBe(true);
    expect(pass.scope.stateLost).toBe(true);
    expect(pass.recorded).toEqual(["StateLost"]);
  });
});
