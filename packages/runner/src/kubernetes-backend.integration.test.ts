import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { renderBackendRoot } from "@captf/render";
import { describeWithTools, moduleRuntimes, runtimeNames, sharedControlPlane } from "@captf/testkit";
import { RunnerFixture, stateInSecret as readState } from "./runner-fixture.test-support.js";

// The runner against each runtime's kubernetes backend on the real API server: state in a Secret,
// a stale lock left by a killed apply, and a restore of an earlier serial.
for (const runtime of runtimeNames) {
  describeWithTools(
    [runtime, "etcd", "kube-apiserver", "kube-controller-manager"],
    `the runner with state in Kubernetes, under ${moduleRuntimes[runtime].displayName}`,
    () => {
      const namespace = `backend-${runtime}-${Date.now().toString(36)}`;
      const suffix = "00c0ffee00c0ffee-m";
      let fixture: RunnerFixture;
      let core: k8s.CoreV1Api;
      let coordination: k8s.CoordinationV1Api;
      let backendConfig: string[];

      beforeAll(async () => {
        const plane = sharedControlPlane();
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(plane.kubeconfigPath);
        core = kc.makeApiClient(k8s.CoreV1Api);
        coordination = kc.makeApiClient(k8s.CoordinationV1Api);
        await core.createNamespace({ body: { metadata: { name: namespace } } });
        backendConfig = [`config_path=${plane.kubeconfigPath}`, `namespace=${namespace}`, `secret_suffix=${suffix}`];
        fixture = await RunnerFixture.create(
          "module",
          {
            variables: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
            outputs: ["provider_id", "generation"],
          },
          runtime,
        );
        await rm(join(fixture.configDir, "backend_override.tf.json"));
      });
      afterAll(async () => {
        await fixture?.remove();
        await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
      });

      const stateInSecret = () => readState(core, namespace, suffix);

      it("applies with the state in a Secret", async () => {
        await fixture.setInputs({ name: "one", generation: 1, sleep_seconds: 0 });
        const run = await fixture.run("apply", { backendConfig });
        expect(run.result.error).toBeNull();
        expect((await stateInSecret()).outputs.provider_id?.value).toBe("noop:///one");
      }, 60_000);

      it("gets past a stale lock left by a killed apply only with --force-unlock", async () => {
        // A real apply of the runtime takes the lock, then dies without releasing it.
        await fixture.setInputs({ name: "one", generation: 1, sleep_seconds: 30 });
        // A real apply of the runtime takes the lock, then dies without releasing it.
        const holder = await fixture.leaveStaleLock(backendConfig, coordination, namespace, suffix);

        await fixture.setInputs({ name: "two", generation: 1, sleep_seconds: 0 });
        const blocked = await fixture.run("apply", { backendConfig, args: ["--lock-timeout=1s"] });
        expect(blocked.exitCode).toBe(1);
        expect(blocked.result.error).toMatchObject({ kind: "step" });
        expect(blocked.result.error?.summary).toMatch(/lock/i);

        const unlocked = await fixture.run("apply", { backendConfig, args: ["--lock-timeout=1s", `--force-unlock=${holder}`] });
        expect(unlocked.result.error).toBeNull();
        expect(unlocked.result.steps.map((step) => step.name)).toEqual(["init", "force-unlock", "validate", "apply"]);
        expect((await stateInSecret()).outputs.provider_id?.value).toBe("noop:///two");
      }, 90_000);

      it("restores an earlier serial from its backup chunks", async () => {
        const backup = await stateInSecret();
        await fixture.setInputs({ name: "three", generation: 1, sleep_seconds: 0 });
        expect((await fixture.run("apply", { backendConfig })).result.error).toBeNull();
        const newer = await stateInSecret();
        expect(newer.serial).toBeGreaterThan(backup.serial);

        const restoreConfig = join(fixture.base, "restore-config");
        await mkdir(join(restoreConfig, "restore"), { recursive: true });
        for (const [file, text] of Object.entries(renderBackendRoot()) as [string, string][])
          await writeFile(join(restoreConfig, file), text);
        await writeFile(join(restoreConfig, "restore", "0"), backup.gzip);
        const restored = await fixture.run("restore", {
          backendConfig,
          configDir: restoreConfig,
          workdir: join(fixture.base, "restore-work"),
          args: ["--restore-chunks=1", "--restore-resources=2"],
        });
        expect(restored.result.error).toBeNull();
        expect(restored.result.steps.map((step) => step.name)).toEqual(["init", "state-push", "state-list"]);
        expect((await stateInSecret()).outputs.provider_id?.value).toBe("noop:///two");
      }, 60_000);
    },
  );
}
