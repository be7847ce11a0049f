import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describeWithTools, moduleRuntimes, runtimeNames } from "@captf/testkit";
import { startEventsServer, type EventsServer } from "./events-server.test-support.js";
import { RunnerFixture, type RunnerRun } from "./runner-fixture.test-support.js";

jest.setTimeout(60_000);

// One canary per secret source; each is printed by the leaky module's local-exec commands.
const canaries = {
  environment: "aws-canary-8f3e2d1c0b9a7e6d",
  variable: "var-canary-1a2b3c4d5e6f",
  bootstrap: "join-token=boot-canary-3c9d8e7f6a5b",
  plan: "plan-canary-5b7e0c1d9a2f4e6b",
};
const bootstrapBase64 = Buffer.from(canaries.bootstrap).toString("base64");
const forbidden = [...Object.values(canaries), bootstrapBase64, "boot-canary"];

// Under each runtime: what each prints differs, and none of it may carry a secret.
for (const runtime of runtimeNames) {
  describeWithTools(
    [runtime],
    `redaction of every secret source in everything the runner prints or writes, under ${moduleRuntimes[runtime].displayName}`,
    () => {
      let fixture: RunnerFixture;
      let events: EventsServer;
      let serviceAccountDir: string;
      beforeAll(async () => {
        fixture = await RunnerFixture.create(
          "leaky-module",
          {
            variables: {
              token: { type: "string", sensitive: true },
              bootstrap_data: { type: "string", sensitive: true },
              fail: { type: "bool" },
            },
          },
          runtime,
        );
        events = await startEventsServer();
        serviceAccountDir = join(fixture.base, "serviceaccount");
        await mkdir(serviceAccountDir, { recursive: true });
        await writeFile(join(serviceAccountDir, "token"), "service-account-token");
      });
      afterAll(async () => {
        await events.close();
        await fixture.remove();
      });

      async function leakyApply(fail: boolean): Promise<RunnerRun> {
        await fixture.setInputs({ token: canaries.variable, bootstrap_data: bootstrapBase64, fail });
        return fixture.run("apply", {
          args: [
            "--guard-deletes",
            // the leak resource is replaced on every run: approve it
            "--inputs-hash=h2:x",
            "--allow-deletes-hash=h2:x",
            "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a/prod/u-1",
            "--job-name=prod-apply-1",
            `--events-server=${events.url}`,
            `--service-account-dir=${serviceAccountDir}`,
          ],
          env: { AWS_SECRET_ACCESS_KEY: canaries.environment },
        });
      }

      function expectNoCanary(text: string): void {
        for (const canary of forbidden) expect(text).not.toContain(canary);
      }

      it("hides the canaries in stdout, stderr, the result and the events of a successful apply", async () => {
        const run = await leakyApply(false);
        expect(run.exitCode).toBe(0);
        // the module really printed them, each replaced
        expect(run.stdout).toContain("env=(sensitive) var=(sensitive) boot=(sensitive) raw=(sensitive) plan=(sensitive)");
        expect(run.stdout).toContain("stderr-env=(sensitive) var=(sensitive)");
        expectNoCanary(run.stdout);
        expectNoCanary(run.stderr);
        expectNoCanary(JSON.stringify(run.result));
      });

      it("hides them in the failure summary and the StepFailed and RunFinished events of a failed apply", async () => {
        const sentBefore = events.rawBodies.length;
        const run = await leakyApply(true);
        expect(run.exitCode).toBe(1);
        expect(run.result.error).toMatchObject({ kind: "step", step: "apply" });
        expect(run.result.error!.summary).toContain("Error: env=(sensitive) var=(sensitive)");
        expectNoCanary(run.stdout);
        expectNoCanary(run.stderr);
        expectNoCanary(JSON.stringify(run.result));

        const sent = events.requests.slice(sentBefore).map((request) => request.body);
        expect(sent.map((event) => event.reason)).toEqual([
          "RunStarted",
          "StepStarted",
          "StepSucceeded",
          "StepStarted",
          "StepSucceeded",
          "StepStarted",
          "StepSucceeded",
          "StepStarted",
          "StepSucceeded",
          "PlanSummary",
          "StepStarted",
          "StepFailed",
          "RunFinished",
        ]);
        expect(sent.find((event) => event.reason === "StepFailed")!.note).toContain("Error: env=(sensitive)");
        expect(sent.at(-1)).toMatchObject({
          type: "Warning",
          note: expect.stringMatching(/^apply failed in step apply after [\d.]+s \(exit 1\)$/),
        });
        expect(events.requests.every((request) => request.authorization === "Bearer service-account-token")).toBe(true);
        for (const body of events.rawBodies) expectNoCanary(body);
      });
    },
  );
}
