import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools } from "@captf/testkit";
import { pino } from "pino";
import { machineAdapter } from "../kinds/adapters.js";
import { backupSecretName } from "../state/state-backups.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { condition, createMachine, readMachine, type Machine } from "./machine-fixture.test-support.js";
import { allJobsFinished, mergePatchOptions, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/sealed-machine:v1";
const terraformImage = "registry.invalid/captf/terraform-machine:v1";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";
// Two keys: the one the machine starts with, and the one it rotates to.
const passphrases = { first: "canary-first-7d0e3b91c5a2f468", second: "canary-second-2f9a64c1e08b7d35" };
const keySecret = "state-key";

type Key = keyof typeof passphrases;

/**
 * TF_ENCRYPTION in its JSON form: the pbkdf2 passphrase `current` as the method, `previous` as the fallback that still reads the state
 * it encrypted. Each key provider and method is named after its key: the state's metadata names the provider that encrypted it.
 */
function tfEncryption(current: Key, previous?: Key): string {
  const keys = previous ? [current, previous] : [current];
  return JSON.stringify({
    key_provider: { pbkdf2: Object.fromEntries(keys.map((key) => [key, { passphrase: passphrases[key] }])) },
    method: { aes_gcm: Object.fromEntries(keys.map((key) => [key, { keys: `key_provider.pbkdf2.${key}` }])) },
    state: { method: `method.aes_gcm.${current}`, ...(previous ? { fallback: { method: `method.aes_gcm.${previous}` } } : {}) },
  });
}

type Sealed = Machine & {
  spec?: { providerID?: string };
  status?: { initialization?: { provisioned?: boolean }; observedStateSerial?: number; stateBackups?: { serial: number }[] };
};

/** The gzip the state Secret (or a backup of it) holds, as text. */
const storedState = (secret: k8s.V1Secret) => gunzipSync(Buffer.from(secret.data!.tfstate!, "base64")).toString("utf8");

// spec.stateEncryption end to end on the real API server, with the real runner and OpenTofu: the runtime encrypts the state with the
// key Secret's TF_ENCRYPTION and the manager reads serial and outputs with it; a rotation through fallback is read at once; an encrypted
// backup stays encrypted and restores; a missing or unusable key runs nothing; the key is in no event, condition, log line or Job.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "encrypted state (OpenTofu)", () => {
  const namespace = `encrypted-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let eventsApi: k8s.EventsV1Api;
  let executor: JobExecutor;
  let managerLog = "";

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    const planeDeps = planeReconcilerDeps(plane, "encrypted-state-test");
    eventsApi = planeDeps.eventsApi;
    const logger = pino({ level: "trace" }, { write: (line: string) => void (managerLog += line) });
    deps = { ...planeDeps.deps, logger };
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("machine") } });
  }, 120_000);
  afterAll(() => executor?.close());

  const pass = async (name: string) => (await reconcileWorkspace(deps, machineAdapter, namespace, name)).action;
  const get = (name: string) => readMachine(plane, namespace, name) as Promise<Sealed>;
  const suffix = (name: string) => stateSecretSuffix({ role: "machine", namespace, name });
  const jobsOf = async (name: string) =>
    (await plane.batch.listNamespacedJob({ namespace })).items.filter((job) => job.metadata?.ownerReferences?.[0]?.name === name);
  const recorded = async (name: string, reason: string) =>
    (await eventsApi.listNamespacedEvent({ namespace })).items.filter((event) => event.regarding?.name === name && event.reason === reason);
  const setKey = (configuration: string) =>
    plane.core.replaceNamespacedSecret({
      name: keySecret,
      namespace,
      body: { metadata: { name: keySecret }, stringData: { TF_ENCRYPTION: configuration } },
    });
  const encryption = (name = keySecret) => ({ machineSpec: { stateEncryption: { secretRef: { name } } } });

  /** Passes, running each Job, until the machine satisfies `until`. */
  async function drive(name: string, until: (machine: Sealed) => boolean): Promise<void> {
    for (let attempt = 0; attempt < 12; attempt++) {
      await pass(name);
      if (until(await get(name))) return;
      if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
    }
    throw new Error(`${name} did not converge: ${JSON.stringify((await get(name)).status)}`);
  }

  it("applies a machine whose state is encrypted: its outputs and serial are read, the state Secret and its backup are " +
    "encrypted", async () => {
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: keySecret }, stringData: { TF_ENCRYPTION: tfEncryption("first") } },
    });
    await createMachine(plane, namespace, "sealed", image, encryption());
    await drive("sealed", (m) => m.status?.initialization?.provisioned === true && Boolean(m.spec?.providerID));
    const machine = await get("sealed");
    expect(machine.spec!.providerID).toBe(`noop:///${namespace}/sealed`);
    expect(machine.status!.observedStateSerial).toBeGreaterThanOrEqual(1);
    expect(condition(machine, "StateReadable")).toMatchObject({ status: "True" });
    expect(condition(machine, "Ready")).toMatchObject({ status: "True" });

    const [apply] = await jobsOf("sealed");
    const source = apply!.spec!.template.spec!.containers.find((container) => container.name === "source")!;
    expect(source.env!.filter((entry) => entry.name === "TF_ENCRYPTION")).toEqual([
      { name: "TF_ENCRYPTION", valueFrom: { secretKeyRef: { name: keySecret, key: "TF_ENCRYPTION" } } },
    ]);
    expect(source.args).toContain("--state-encryption");

    const state = await plane.core.readNamespacedSecret({ namespace, name: stateSecretName(suffix("sealed")) });
    const stored = storedState(state);
    expect(JSON.parse(stored)).toMatchObject({ encryption_version: "v0", encrypted_data: expect.any(String) });
    expect(stored).not.toContain("noop:///");
    expect(stored).not.toContain("10.0.0.1");
    // A backup is a copy of the stored bytes: as encrypted as the state.
    const backup = await plane.core.readNamespacedSecret({
      namespace,
      name: backupSecretName(suffix("sealed"), machine.status!.observedStateSerial!, 0),
    });
    expect(backup.data!.tfstate).toBe(state.data!.tfstate);
    expect(await pass("sealed")).toBe("UpToDate");
  }, 240_000);

  it("reads the state through the fallback once the key rotates, without a restart; restores the encrypted backup under the new " +
    "key", async () => {
    await setKey(tfEncryption("second", "first"));
    expect(await pass("sealed")).toBe("UpToDate");
    expect(condition(await get("sealed"), "StateReadable")).toMatchObject({ status: "True" });

    // The state is lost; its backup (encrypted under the first key) is restored: the runtime decrypts it through the fallback and
    // writes it under the second key.
    const serial = (await get("sealed")).status!.stateBackups![0]!.serial;
    await plane.core.deleteNamespacedSecret({ namespace, name: stateSecretName(suffix("sealed")) });
    expect(await pass("sealed")).toBe("StateUnreadable");
    expect(condition(await get("sealed"), "StateReadable")).toMatchObject({ status: "False", reason: "StateLost" });
    await plane.custom.patchNamespacedCustomObject(
      {
        ...infra,
        namespace,
        plural: "terraformmachines",
        name: "sealed",
        body: { metadata: { annotations: { "captf.io/restore-state": String(serial) } } },
      },
      mergePatchOptions(),
    );
    expect(await pass("sealed")).toMatch(/^started restore \(RestoreRequested\)/);
    const restoreJob = (await jobsOf("sealed")).find((job) => job.metadata?.labels?.[opLabel] === "restore")!;
    expect(restoreJob.spec!.template.spec!.containers[0]!.args).toContain("--state-encryption");
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
    await pass("sealed");
    const restored = await get("sealed");
    expect(condition(restored, "RestoreJobSucceeded")).toMatchObject({ status: "True", reason: "StateRestored" });
    expect(condition(restored, "StateReadable")).toMatchObject({ status: "True" });
    const stored = storedState(await plane.core.readNamespacedSecret({ namespace, name: stateSecretName(suffix("sealed")) }));
    expect(JSON.parse(stored)).toMatchObject({ encryption_version: "v0" });
    expect(stored).not.toContain("noop:///");

    // Written under the second key: the first one is no longer needed to read it.
    await setKey(tfEncryption("second"));
    expect(await pass("sealed")).toBe("UpToDate");
    expect(condition(await get("sealed"), "StateReadable")).toMatchObject({ status: "True" });
    expect((await get("sealed")).spec!.providerID).toBe(`noop:///${namespace}/sealed`);
  }, 240_000);

  it("runs nothing while the key Secret is missing or unusable, and applies once it can be used", async () => {
    await createMachine(plane, namespace, "keyless", image, encryption("keyless-key"));
    expect(await pass("keyless")).toBe("added finalizer");
    expect(await pass("keyless")).toBe("StateUnreadable");
    let machine = await get("keyless");
    expect(condition(machine, "StateReadable")).toMatchObject({
      status: "False",
      reason: "StateEncryptionKeyUnavailable",
      message: expect.stringContaining("Secret keyless-key (spec.stateEncryption.secretRef) does not exist"),
    });
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "keyless-key" }, stringData: { TF_ENCRYPTION: "not a configuration" } },
    });
    expect(await pass("keyless")).toBe("StateUnreadable");
    machine = await get("keyless");
    expect(condition(machine, "StateReadable")).toMatchObject({ status: "False", reason: "StateEncryptionKeyUnavailable" });
    expect(await jobsOf("keyless")).toEqual([]);
    expect(await recorded("keyless", "JobCreated")).toEqual([]);

    // Fixed: the next pass reads the Secret again and the apply starts.
    await plane.core.replaceNamespacedSecret({
      name: "keyless-key",
      namespace,
      body: { metadata: { name: "keyless-key" }, stringData: { TF_ENCRYPTION: tfEncryption("first") } },
    });
    expect(await pass("keyless")).toMatch(/^started apply \(NoState\)/);
  }, 120_000);

  it("keeps both passphrases out of every event, condition, status, log line, Job and Pod", async () => {
    const machines = await Promise.all(["sealed", "keyless"].map(get));
    const jobs = (await plane.batch.listNamespacedJob({ namespace })).items;
    const pods = (await plane.core.listNamespacedPod({ namespace })).items;
    const places = {
      events: JSON.stringify((await eventsApi.listNamespacedEvent({ namespace })).items),
      status: JSON.stringify(machines.map((machine) => machine.status)),
      managerLog,
      runnerLogs: [...executor.logs.values()].join("\n"),
      jobs: JSON.stringify(jobs),
      pods: JSON.stringify(pods),
    };
    // Something to look in: the apply and restore Jobs ran and logged. The passes log only warnings (the controller adds each pass's
    // action), so the manager's log is usually empty here.
    expect(jobs.length).toBeGreaterThanOrEqual(3);
    expect(places.runnerLogs).toContain("run finished");
    for (const [place, text] of Object.entries(places))
      for (const passphrase of Object.values(passphrases)) expect([place, text.includes(passphrase)]).toEqual([place, false]);
  });
});

// Terraform has no state encryption: an object on a Terraform image with encryption asked for is refused by its runner before any
// step (it would write the state in plain), with a condition and an event naming why.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "terraform"], "encrypted state on Terraform", () => {
  const namespace = `encrypted-tf-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let eventsApi: k8s.EventsV1Api;
  let executor: JobExecutor;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    ({ deps, eventsApi } = planeReconcilerDeps(plane, "encrypted-terraform-test"));
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [terraformImage]: noopModuleDirectory("machine") },
      runtimes: { [terraformImage]: "terraform" },
    });
  }, 120_000);
  afterAll(() => executor?.close());

  describe("a machine asking for encryption", () => {
    it("is refused with ImageInvalid and a JobFailed event naming the runtime, and no state is written", async () => {
      await plane.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: keySecret }, stringData: { TF_ENCRYPTION: tfEncryption("first") } },
      });
      await createMachine(plane, namespace, "plain", terraformImage, {
        machineSpec: { stateEncryption: { secretRef: { name: keySecret } } },
      });
      const pass = async () => (await reconcileWorkspace(deps, machineAdapter, namespace, "plain")).action;
      expect(await pass()).toBe("added finalizer");
      expect(await pass()).toMatch(/^started apply \(NoState\)/);
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
      await pass();
      const machine = await readMachine(plane, namespace, "plain");
      const refusal = /state encryption is asked for .* but \/captf\/runtime is Terraform v\d+\.\d+\.\d+, which cannot encrypt state/;
      expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({
        status: "False",
        reason: "ImageInvalid",
        message: expect.stringMatching(refusal),
      });
      const failed = (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.regarding?.name === "plain" && event.reason === "JobFailed",
      );
      expect(failed.map((event) => event.note)).toEqual([expect.stringMatching(refusal)]);
      const suffix = stateSecretSuffix({ role: "machine", namespace, name: "plain" });
      const state = await plane.core.readNamespacedSecret({ namespace, name: stateSecretName(suffix) }).catch(() => undefined);
      expect(state).toBeUndefined();
      const steps = (machine.status as { lastRun?: { steps?: unknown[] } } | undefined)?.lastRun?.steps ?? [];
      expect(steps).toEqual([]);
      const said = [...executor.logs.values(), JSON.stringify(machine.status), ...failed.map((event) => event.note)].join("\n");
      expect(said).not.toContain(passphrases.first);
    }, 180_000);
  });
});
