import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { commonInputs, type MachineInputs } from "@captf/contract";
import type { RunResult } from "@captf/contract/run-result";
import { backendConfigValues, renderGeneratedRoot, stateSecretName, stateSecretSuffix } from "@captf/render";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, requireTool, sharedControlPlane, writeKubeconfig } from "@captf/testkit";

// The image contract end to end: a module image root with no libc at all (the no-op module at
// /captf/module, a static tofu at /captf/runtime, the bundle at /captf/bin) runs the runner
// under chroot, and the state lands in a Secret of the real API server.
const chrootCommand = execFileSync("sh", ["-c", "command -v chroot"], { encoding: "utf8" }).trim();

describeWithTools(["tofu", "etcd", "kube-apiserver", "kube-controller-manager"], "the runner bundle in an image root without libc", () => {
  const root = mkdtempSync(join(tmpdir(), "captf-image-root-"));
  const namespace = `bundle-${Date.now().toString(36)}`;
  const owner = { role: "machine" as const, namespace, name: "m-0", clusterName: "demo" };
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    const plane = sharedControlPlane();
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });

    const bundle = join(root, "captf", "bin");
    execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build-bundle.mjs", import.meta.url)), "--out", bundle], {
      stdio: "pipe",
    });
    cpSync(noopModuleDirectory("machine"), join(root, "captf", "module"), { recursive: true, filter: (src) => !src.includes("/tests") });
    copyFileSync(requireTool("tofu"), join(root, "captf", "runtime"));
    execFileSync("chmod", ["0755", join(root, "captf", "runtime")]);
    for (const dir of ["captf/work", "captf/config", "captf/kube", "tmp", "dev"]) mkdirSync(join(root, dir), { recursive: true });
    // Every container runtime provides /dev/null; Node opens it for a child's ignored stdin.
    execFileSync("mknod", ["-m", "666", join(root, "dev/null"), "c", "1", "3"]);
    copyFileSync(plane.caFile, join(root, "captf/kube/ca.crt"));
    writeKubeconfig(join(root, "captf/kube/kubeconfig"), { server: plane.server, token: plane.token, caFile: "/captf/kube/ca.crt" });

    const inputs: MachineInputs = {
      ...commonInputs({ cluster: { name: "demo", namespace }, kind: "TerraformMachine", name: "m-0", namespace }),
      captf_cluster_outputs: { backend_id: "noop-backend-1" },
      machine_name: "m-0",
      bootstrap_data: Buffer.from("#cloud-config\n").toString("base64"),
      bootstrap_format: "cloud-config",
      failure_domain: null,
      kubernetes_version: "v1.36.2",
      control_plane: false,
    };
    for (const [file, text] of Object.entries(renderGeneratedRoot("machine", inputs)) as [string, string][])
      writeFileSync(join(root, "captf/config", file), text);
  });

  afterAll(async () => {
    await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  });

  it("has no libc in the root: only what the bundle carries", () => {
    expect(existsSync(join(root, "lib"))).toBe(false);
    expect(existsSync(join(root, "usr"))).toBe(false);
    expect(existsSync(join(root, "bin"))).toBe(false);
    expect(existsSync(join(root, "captf/bin/lib/libc.so.6"))).toBe(true);
  });

  it("applies the no-op machine with state in a kubernetes Secret", async () => {
    // An absolute chroot: the child's PATH is the image's, not this machine's.
    const run = spawnSync(
      chrootCommand,
      [
        root,
        "/captf/bin/node",
        "/captf/bin/runner.cjs", // what a Job's main container starts
        "run",
        "--op=apply",
        "--image=registry.invalid/noop-machine:test",
        "--result=/captf/work/result.json",
        ...backendConfigValues(owner, ["config_path=/captf/kube/kubeconfig"]).map((value) => `--backend-config=${value}`),
      ],
      { encoding: "utf8", env: { PATH: "/captf/bin", TF_IN_AUTOMATION: "1", TF_INPUT: "0" }, timeout: 120_000 },
    );
    expect({ spawnError: run.error?.message, stderr: existsSync(join(root, "captf/work/result.json")) ? "" : run.stderr }).toEqual({
      spawnError: undefined,
      stderr: "",
    });
    const result = JSON.parse(readFileSync(join(root, "captf/work/result.json"), "utf8")) as RunResult;
    expect({ status: run.status, error: result.error }).toEqual({ status: 0, error: null });
    expect(result.steps.map((step) => step.name)).toEqual(["init", "validate", "apply"]);

    const secret = await core.readNamespacedSecret({ name: stateSecretName(stateSecretSuffix(owner)), namespace });
    expect(secret.metadata?.labels).toMatchObject({ "captf.io/managed": "true", "cluster.x-k8s.io/cluster-name": "demo" });
    const state = JSON.parse(gunzipSync(Buffer.from(secret.data!.tfstate!, "base64")).toString("utf8")) as {
      outputs: Record<string, { value: unknown }>;
    };
    expect(state.outputs.provider_id?.value).toBe(`noop:///${namespace}/m-0`);
  });
});
