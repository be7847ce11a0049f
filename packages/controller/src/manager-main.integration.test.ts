// The manager as it ships: the bundle from scripts/build-manager-bundle.mjs run as a child process
// against the shared control plane with a kubeconfig. It elects itself, serves its probes and
// metrics, reconciles a TerraformMachine of its namespace (--namespace keeps it off other suites'
// objects), and exits 0 on SIGTERM, releasing the Lease.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { describeWithTools, sharedControlPlane, waitFor } from "@captf/testkit";
import { apiGroup, apiVersion, finalizers, kinds } from "@captf/contract/api";
import { minimalMachine } from "./api/examples.test-support.js";
import { managerFlags } from "./flags.js";
import { managerVersion } from "./manager-main.js";
import {
  buildManagerBundle,
  httpsRequest,
  killManagerProcess,
  runManagerBundle,
  startManagerProcess,
  type ManagerProcess,
} from "./manager-process.test-support.js";
import { preparePlane, type PlaneClients, mergePatchOptions } from "./reconcile/plane.test-support.js";
import { webhookPath } from "./webhooks/configuration.js";
import type { TerraformMachine } from "./api/terraformmachine.js";
import type { ReadBack } from "./reconcile/read-back.test-support.js";

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the manager process", () => {
  const namespace = `manager-main-${Date.now().toString(36)}`;
  const work = mkdtempSync(join(tmpdir(), "captf-manager-main-"));
  const leaseName = "controller-leader-election-captf";
  const machines = { group: apiGroup, version: apiVersion, namespace, plural: "terraformmachines" };
  let bundle: string;
  let plane: PlaneClients;
  let manager: ManagerProcess | undefined;

  beforeAll(async () => {
    bundle = buildManagerBundle(join(work, "bundle"), "c0ffee");
    plane = await preparePlane(namespace);
  }, 60_000);

  afterAll(async () => {
    await killManagerProcess(manager);
    // The manager is gone: take its finalizer off so the namespace can go.
    await plane?.custom
      .patchNamespacedCustomObject({ ...machines, name: "m-0", body: { metadata: { finalizers: null } } }, mergePatchOptions())
      .catch(() => undefined);
    await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  });

  it("exits 2 with every problem on one line for invalid flags", () => {
    const invalid = runManagerBundle(bundle, ["--sync-period=0"]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toBe(
      "manager: invalid flags: --runner-image: required (or set $CAPTF_MANAGER_IMAGE); --sync-period: must be > 0, got 0\n",
    );
  });

  it("prints its help, listing every flag, and its version", () => {
    const help = runManagerBundle(bundle, ["--help"]);
    expect(help.code).toBe(0);
    for (const flag of managerFlags) expect(help.stdout).toContain(`--${flag.name}`);
    const version = runManagerBundle(bundle, ["--version"]);
    expect(version).toEqual({
      code: 0,
      stdout: `manager ${managerVersion} (commit c0ffee, contract v1alpha1, node ${process.version})\n`,
      stderr: "",
    });
  });

  it("leads, serves probes, metrics and the webhooks, reconciles a TerraformMachine, and exits 0 on SIGTERM", async () => {
    const controlPlane = sharedControlPlane();
    manager = await startManagerProcess({
      bundle,
      kubeconfigPath: controlPlane.kubeconfigPath,
      dir: work,
      args: [`--namespace=${namespace}`, "--leader-elect", "--leader-elect-retry-period=250ms"],
      env: { POD_NAMESPACE: namespace, CAPTF_MANAGER_IMAGE: "registry.invalid/captf-controller:test" },
    });
    const running = manager;
    const lease = await waitFor(
      async () => {
        const found = await plane.coordination.readNamespacedLease({ namespace, name: leaseName }).catch(() => undefined);
        return found?.spec?.holderIdentity ? found : undefined;
      },
      30_000,
      `the leader Lease (manager output:\n${running.output()})`,
    );
    expect(lease.spec!.holderIdentity).toMatch(/.+/);

    for (const path of ["/healthz", "/readyz"]) expect((await fetch(`http://127.0.0.1:${running.ports.health}${path}`)).status).toBe(200);
    const ca = readFileSync(running.certificate.caFile, "utf8");
    expect((await httpsRequest(`https://127.0.0.1:${running.ports.metrics}/metrics`, ca)).status).toBe(401);
    const metrics = await httpsRequest(`https://127.0.0.1:${running.ports.metrics}/metrics`, ca, { token: controlPlane.token });
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain(`captf_build_info{version="${managerVersion}",commit="c0ffee",contract="v1alpha1"} 1`);

    const review = await httpsRequest(`https://127.0.0.1:${running.ports.webhook}${webhookPath(kinds.machine)}`, ca, {
      json: {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid: "u-1",
          kind: { group: apiGroup, version: apiVersion, kind: kinds.machine },
          operation: "CREATE",
          userInfo: { username: "alice" },
          object: minimalMachine("m-0"),
        },
      },
    });
    expect({ status: review.status, response: (JSON.parse(review.body) as { response: unknown }).response }).toEqual({
      status: 200,
      response: { uid: "u-1", allowed: true },
    });

    await plane.custom.createNamespacedCustomObject({ ...machines, body: minimalMachine("m-0") });
    const reconciled = await waitFor(
      async () => {
        const object = (await plane.custom.getNamespacedCustomObject({ ...machines, name: "m-0" })) as ReadBack<TerraformMachine>;
        return object.status?.conditions?.some((condition) => condition.type === "DependenciesReady") ? object : undefined;
      },
      30_000,
      "the TerraformMachine reconciled",
    );
    expect(reconciled.metadata.finalizers).toContain(finalizers.TerraformMachine);
    expect(reconciled.status.conditions).toContainEqual(
      expect.objectContaining({ type: "DependenciesReady", status: "Unknown", reason: "WaitingForOwner" }),
    );

    const started = Date.now();
    running.child.kill("SIGTERM");
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(20_000);
    const messages = running.records().map((record) => record.msg);
    expect(messages).toEqual(
      expect.arrayContaining([
        "captf manager starting",
        "started leading",
        "signal received, shutting down",
        "manager exiting",
        "manager stopped",
      ]),
    );
    expect(messages).toContain(`FLAG: --namespace="${namespace}"`);
    const released = await plane.coordination.readNamespacedLease({ namespace, name: leaseName });
    expect(released.spec!.holderIdentity ?? "").toBe("");
  }, 90_000);
});
