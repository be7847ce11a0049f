import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { emptyPlanHash } from "@captf/contract/run-result";
import { describeWithTools } from "@captf/testkit";
import { startEventsServer, type EventsServer } from "./events-server.test-support.js";
import { RunnerFixture } from "./runner-fixture.test-support.js";

jest.setTimeout(60_000);

/** A passphrase of words the runtime's word wrap may break apart; each word is a canary of its own. */
const errorCanaries = { credential: "cred-canary-7d1e9f3a2b4c6e8d", passphrase: 'tulip-4e2f quartz-9a1c "amber-77d0" staple-b3e5' };
const forbidden = [errorCanaries.credential, ...errorCanaries.passphrase.split(" ").map((word) => word.replace(/"/g, ""))];

// Issue 17's secrets drill, fast: a module whose apply fails with an error message printing sensitive
// values (wrapped by OpenTofu over two lines): none leaves the runner (logs, events, result).
describeWithTools(["tofu"], "sensitive values in a module's error message", () => {
  let fixture: RunnerFixture;
  let events: EventsServer;
  let serviceAccountDir: string;
  beforeAll(async () => {
    fixture = await RunnerFixture.create("error-module", {
      variables: {
        credential: { type: "string", sensitive: true },
        passphrase: { type: "string", sensitive: true },
        fail_with: { type: "string" },
      },
    });
    events = await startEventsServer();
    serviceAccountDir = join(fixture.base, "serviceaccount");
    await mkdir(serviceAccountDir, { recursive: true });
    await writeFile(join(serviceAccountDir, "token"), "service-account-token");
  });
  afterAll(async () => {
    await events?.close();
    await fixture?.remove();
  });

  const eventArgs = () => [
    "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a/prod/u-1",
    "--job-name=prod-apply-1",
    `--events-server=${events.url}`,
    `--service-account-dir=${serviceAccountDir}`,
  ];

  it("never leave the runner when a precondition's message wraps the passphrase over two lines", async () => {
    await fixture.setInputs({ ...errorCanaries, fail_with: "precondition" });
    const run = await fixture.run("apply", { args: eventArgs() });
    expect(run.exitCode).toBe(1);
    expect(run.result.error).toMatchObject({ kind: "step", step: "apply" });
    // The runtime printed the message, values replaced.
    expect(run.stdout + run.stderr).toContain("rejected the passphrase (sensitive) and the credential");
    const places = { stdout: run.stdout, stderr: run.stderr, result: JSON.stringify(run.result), events: events.rawBodies.join("\n") };
    for (const [place, text] of Object.entries(places))
      for (const canary of forbidden) expect([place, text.includes(canary)]).toEqual([place, false]);
    expect(events.requests.map((request) => request.body.reason)).toContain("StepFailed");
  });

  // Not a secrets case: the same module with nothing to fail plans empty, which is what --expect-plan of the empty plan checks.
  it("ends an apply with --expect-plan of the empty plan right after the plan: zero changes, no ResourcesChanged event", async () => {
    await fixture.setInputs({ ...errorCanaries, fail_with: "none" });
    const sent = events.requests.length;
    const run = await fixture.run("apply", { args: [`--expect-plan=${emptyPlanHash}`, ...eventArgs()] });
    expect(run.exitCode).toBe(0);
    expect(run.result.steps.map((step) => step.name)).toEqual(["init", "validate", "plan"]);
    expect(run.result.changes).toEqual({ add: 0, change: 0, destroy: 0 });
    const reasons = events.requests.slice(sent).map((request) => request.body.reason);
    expect(reasons).toContain("PlanSummary");
    expect(reasons).not.toContain("ResourcesChanged");
    expect(events.requests.at(-1)!.body).toMatchObject({ reason: "RunFinished", type: "Normal" });
  });
});
