import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, moduleRuntimes, requireTool, runtimeNames, runtimeVersion, sharedControlPlane } from "@captf/testkit";
import { KubeClient } from "../runtime/kube-client.js";
import { readState } from "./read-state.js";

// Each runtime writes the state through its kubernetes backend into the real API server; captf reads
// it back. Both write one gzip Secret (Terraform 1.5.7 does not chunk): checked here on what each wrote.
for (const runtime of runtimeNames) {
  describeWithTools(
    [runtime, "etcd", "kube-apiserver", "kube-controller-manager"],
    `reading state ${moduleRuntimes[runtime].displayName} wrote`,
    () => {
      const namespace = `state-${runtime}-${Date.now().toString(36)}`;
      const dir = mkdtempSync(join(tmpdir(), `captf-state-${runtime}-`));
      let core: k8s.CoreV1Api;
      let client: KubeClient;

      beforeAll(async () => {
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(sharedControlPlane().kubeconfigPath);
        core = kc.makeApiClient(k8s.CoreV1Api);
        client = new KubeClient(kc);
        await core.createNamespace({ body: { metadata: { name: namespace } } });
        writeFileSync(join(dir, "cli.tfrc"), "");
      });
      afterAll(() => rmSync(dir, { recursive: true, force: true }));

      function applyWithKubernetesBackend(suffix: string, blobBytes: number): void {
        writeFileSync(
          join(dir, "main.tf.json"),
          JSON.stringify({
            terraform: { backend: { kubernetes: {} } },
            resource: { terraform_data: { blob: { input: "x".repeat(blobBytes) } } },
            output: { size: { value: blobBytes }, greeting: { value: "hello" } },
          }),
        );
        const env = {
          PATH: process.env.PATH,
          HOME: dir,
          TF_CLI_CONFIG_FILE: join(dir, "cli.tfrc"),
          TF_IN_AUTOMATION: "1",
          TF_DATA_DIR: join(dir, `.terraform-${suffix}`),
        };
        const binary = requireTool(runtime);
        execFileSync(
          binary,
          [
            "init",
            "-input=false",
            "-no-color",
            `-backend-config=config_path=${sharedControlPlane().kubeconfigPath}`,
            `-backend-config=namespace=${namespace}`,
            `-backend-config=secret_suffix=${suffix}`,
          ],
          { cwd: dir, env, stdio: "pipe" },
        );
        execFileSync(binary, ["apply", "-auto-approve", "-input=false", "-no-color"], {
          cwd: dir,
          env,
          stdio: ["ignore", "ignore", "pipe"],
        });
      }

      /** The Secrets the backend wrote for a suffix: their names and annotations. */
      async function stateSecrets(suffix: string): Promise<{ name: string; annotations: Record<string, string> }[]> {
        const list = await core.listNamespacedSecret({ namespace, labelSelector: `tfstateSecretSuffix=${suffix}` });
        return list.items.map((secret) => ({ name: secret.metadata!.name!, annotations: secret.metadata!.annotations ?? {} }));
      }

      it("reads outputs, serial and resources, and is absent for an unknown suffix", async () => {
        const suffix = stateSecretSuffix({ role: "machine", namespace, name: "small" });
        applyWithKubernetesBackend(suffix, 10);
        const reading = await readState(client, namespace, suffix);
        expect(reading).toMatchObject({
          kind: "ok",
          state: { outputs: { size: 10, greeting: "hello" }, managedResources: 1, secrets: 1, terraformVersion: runtimeVersion(runtime) },
        });
        expect(await stateSecrets(suffix)).toEqual([{ name: stateSecretName(suffix), annotations: { encoding: "gzip" } }]);
        expect(reading.kind === "ok" && reading.state.serial).toBeGreaterThanOrEqual(1);
        expect(await readState(client, namespace, "ffffffffffffffff-m")).toEqual({ kind: "absent" });
      }, 60_000);

      it("round-trips a state above 1 MiB of JSON through one compressed Secret", async () => {
        const suffix = stateSecretSuffix({ role: "machine", namespace, name: "large" });
        applyWithKubernetesBackend(suffix, 1_500_000);
        const reading = await readState(client, namespace, suffix);
        expect(reading.kind).toBe("ok");
        if (reading.kind !== "ok") return;
        expect(reading.state.bytes).toBeGreaterThan(1024 * 1024);
        expect(reading.state.compressedBytes).toBeLessThan(1024 * 1024);
        expect(reading.state.outputs.size).toBe(1_500_000);
        expect(reading.state.secrets).toBe(1);
        expect((await stateSecrets(suffix)).map((secret) => secret.name)).toEqual([stateSecretName(suffix)]);
      }, 60_000);
    },
  );
}
