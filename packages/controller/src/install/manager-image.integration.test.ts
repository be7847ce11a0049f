// The captf-controller image as scripts/build-manager-image.mjs builds it: its config read back with
// skopeo, its root unpacked with umoci and run under chroot: the entrypoint answers --version as the
// image's user, the runner bundle answers too, and the init container's copy command puts a
// bundle into /captf/bin that runs in a root holding nothing else (as in a module image). Then the
// shipped Deployment runs the image from a loopback registry on the chroot kubelet: in-cluster
// configuration, the serving certificate Secret mounted, a read-only root, SIGTERM on deletion.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, freeLoopbackPort, pushImage, sharedControlPlane, startChrootKubelet, startLocalRegistry, waitFor, type ChrootKubelet, type LocalRegistry } from "@captf/testkit";
import { contractVersion } from "@captf/contract";
import { apiGroup, apiVersion, finalizers } from "@captf/contract/api";
import { minimalMachine } from "../api/examples.test-support.js";
import { defaultJobEnvironment } from "../jobs/build-job.js";
import { managerVersion } from "../manager-main.js";
import { preparePlane, type PlaneClients } from "../reconcile/plane.test-support.js";
import { mergePatchOptions } from "../reconcile/workspace-reconciler.js";
import { generateServingCertificate } from "../webhooks/certificates.test-support.js";
import { deploymentObject, installNames, managerUser } from "./manifests.js";

const imageScript = fileURLToPath(new URL("../../scripts/build-manager-image.mjs", import.meta.url));
const chroot = ["/usr/sbin/chroot", "/sbin/chroot", "/usr/bin/chroot"].find((path) => existsSync(path)) ?? "chroot";

const runnerVersionLine = new RegExp(`^runner \\S+ \\(contract ${contractVersion}, node ${process.version.replaceAll(".", "\\.")}\\)\n$`);

interface ImageConfig {
  config: { User: string; Env: string[]; Entrypoint: string[]; Cmd?: string[]; WorkingDir: string; Labels: Record<string, string> };
  architecture: string;
  os: string;
}

describeWithTools(["umoci", "skopeo", "docker-registry", "etcd", "kube-apiserver", "kube-controller-manager"], "the captf-controller image", () => {
  const work = mkdtempSync(join(tmpdir(), "captf-manager-image-"));
  const layout = join(work, "oci");
  const root = join(work, "root");
  const namespace = `manager-image-${Date.now().toString(36)}`;
  let config: ImageConfig;
  let plane: PlaneClients | undefined;
  let registry: LocalRegistry | undefined;
  let kubelet: ChrootKubelet | undefined;

  /** Runs `command` inside `rootDir` with only the image's environment, as the image's user unless told otherwise. */
  const inRoot = (rootDir: string, command: string[], user = `${managerUser}:${managerUser}`) =>
    execFileSync(chroot, [`--userspec=${user}`, rootDir, ...command], { env: Object.fromEntries(config.config.Env.map((line) => line.split("=", 2) as [string, string])), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error("this suite runs the image's root under chroot, which needs root");
    execFileSync(process.execPath, [imageScript, "--out", layout, "--tag", "test", "--commit", "c0ffee"], { stdio: "pipe" });
    config = JSON.parse(execFileSync("skopeo", ["inspect", "--config", `oci:${layout}:test`], { encoding: "utf8" })) as ImageConfig;
    execFileSync("umoci", ["raw", "unpack", "--image", `${layout}:test`, root], { stdio: "pipe" });
  }, 180_000);

  afterAll(async () => {
    await kubelet?.stop();
    await registry?.stop();
    const machines = { group: apiGroup, version: apiVersion, namespace, plural: "terraformmachines" };
    await plane?.custom.patchNamespacedCustomObject({ ...machines, name: "m-0", body: { metadata: { finalizers: null } } }, mergePatchOptions()).catch(() => undefined);
    await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it("runs node /opt/captf/manager/manager.mjs as 65532, with the OCI labels", () => {
    expect(config.config.User).toBe("65532:65532");
    expect(config.config.Entrypoint).toEqual(["node", "/opt/captf/manager/manager.mjs"]);
    expect(config.config.Cmd).toBeUndefined();
    expect(config.config.Env).toEqual(["PATH=/usr/local/bin:/usr/bin:/bin"]);
    expect(config.os).toBe("linux");
    expect(config.config.Labels).toMatchObject({
      "org.opencontainers.image.title": "captf-controller",
      "org.opencontainers.image.version": managerVersion,
      "org.opencontainers.image.revision": "c0ffee",
      "org.opencontainers.image.source": expect.stringMatching(/^https:\/\//),
    });
  });

  it("answers --version through its entrypoint and runner version from the runner bundle, in its own root", () => {
    expect(inRoot(root, [...config.config.Entrypoint, "--version"])).toBe(`manager ${managerVersion} (commit c0ffee, contract ${contractVersion}, node ${process.version})\n`);
    expect(inRoot(root, ["node", "/opt/captf/runner/runner.mjs", "version"])).toMatch(runnerVersionLine);
  });

  it("gives a Job's init container a runner bundle that runs from /captf/bin in a root without anything else", () => {
    mkdirSync(join(root, "captf/bin"), { recursive: true });
    inRoot(root, defaultJobEnvironment.runnerCopyCommand, "0:0");
    const bare = join(work, "bare");
    cpSync(join(root, "captf/bin"), join(bare, "captf/bin"), { recursive: true });
    expect(inRoot(bare, ["/captf/bin/node", "/captf/bin/runner.mjs", "version"])).toMatch(runnerVersionLine);
  });

  it("runs as the shipped Deployment on the chroot kubelet: leads, reconciles, and stops on the Pod's deletion", async () => {
    const controlPlane = sharedControlPlane();
    plane = await preparePlane(namespace);
    registry = await startLocalRegistry();
    const image = `${registry.host}/captf/captf-controller:test`;
    pushImage(layout, "test", image);

    const certificate = generateServingCertificate(join(work, "certs"));
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: installNames.certificateSecret }, type: "kubernetes.io/tls", data: { "tls.crt": readFileSync(certificate.certFile).toString("base64"), "tls.key": readFileSync(certificate.keyFile).toString("base64") } },
    });
    // The shipped Deployment, but kept to this suite's namespace and, on the host network, to free ports (a repeated flag's last value wins).
    const deployment = deploymentObject({ namespace, image });
    const container = deployment.spec!.template.spec!.containers[0]!;
    const health = await freeLoopbackPort();
    container.args = [...container.args!, `--namespace=${namespace}`, `--health-addr=127.0.0.1:${health}`, `--diagnostics-address=127.0.0.1:${await freeLoopbackPort()}`, `--webhook-port=${await freeLoopbackPort()}`];
    const apps = kubeConfigOf(controlPlane.kubeconfigPath).makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    const kubeletLog: string[] = [];
    kubelet = await startChrootKubelet({
      kubeconfigPath: controlPlane.kubeconfigPath,
      nodeName: `manager-image-${Date.now().toString(36)}`,
      namespaces: [namespace],
      serviceAccountTokens: { token: controlPlane.token },
      log: (line) => kubeletLog.push(line),
    });

    const pod = await waitFor(async () => (await plane!.core.listNamespacedPod({ namespace })).items.find((candidate) => candidate.status?.phase === "Running"), 120_000, "the manager's Pod running");
    const podName = pod.metadata!.name!;
    const logOf = () => kubelet!.containerLog(namespace, podName, "manager");
    const lease = await waitFor(async () => {
      const found = await plane!.coordination.readNamespacedLease({ namespace, name: "controller-leader-election-captf" }).catch(() => undefined);
      return found?.spec?.holderIdentity ? found : undefined;
    }, 60_000, `the leader Lease (kubelet:\n${kubeletLog.join("\n")})`);
    expect(lease.spec!.holderIdentity).toContain(podName);
    expect((await fetch(`http://127.0.0.1:${health}/readyz`)).status).toBe(200);

    const machines = { group: apiGroup, version: apiVersion, namespace, plural: "terraformmachines" };
    await plane.custom.createNamespacedCustomObject({ ...machines, body: minimalMachine("m-0") });
    const object = await waitFor(async () => {
      const current = (await plane!.custom.getNamespacedCustomObject({ ...machines, name: "m-0" })) as Record<string, any>;
      return current.status?.conditions?.some((condition: { type: string }) => condition.type === "DependenciesReady") ? current : undefined;
    }, 30_000, `the TerraformMachine reconciled (manager log:\n${logOf()})`);
    expect(object.metadata.finalizers).toContain(finalizers.TerraformMachine);

    await apps.deleteNamespacedDeployment({ namespace, name: deployment.metadata!.name!, propagationPolicy: "Foreground" });
    await waitFor(async () => ((await plane!.coordination.readNamespacedLease({ namespace, name: "controller-leader-election-captf" })).spec?.holderIdentity ? undefined : true), 60_000, "the Lease released");
    const messages = logOf()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages).toEqual(expect.arrayContaining([`FLAG: --runner-image="${image}"`, "started leading", "signal received, shutting down", "manager exiting"]));
  }, 240_000);
});

function kubeConfigOf(path: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}
