// Signed module images and encrypted state, as a user runs them (issue 31): a TerraformModulePolicy covers a
// namespace of its own, whose cluster runs a cosign-signed image and whose machine's image is unsigned at first. The
// machine is held (ImageVerified False/SignatureMissing, no Job) until real cosign signs its digest; it then runs that
// digest, with its state encrypted by OpenTofu from the first apply (pbkdf2; the cluster's by a raw aes_gcm key). The
// state Secret is lost, restored from its encrypted backup, and the Cluster is deleted: every Job verified, every
// state encrypted, both keys in no log, event, status, Job or Pod.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { parseRegistryReference, RegistrySource } from "@captf/contract/oci";
import { cosignKeyPair, cosignSign, waitFor } from "@captf/testkit";
import { pushImage } from "@captf/testkit/plane";
import { applyObjects } from "../apply.js";
import { managerNamespace, moduleTag } from "../captf-install.js";
import type { Condition, CustomObjectList, TerraformObject } from "../objects.js";
import { capiApi, clusterctlClusters, infraApi, snapshot } from "./clusterctl-clusters.js";
import { mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

const at = { namespace: "signed-state", cluster: "signed" };
const policyName = "e2e-signed-modules";
const policyApi = { ...infraApi, plural: "terraformmodulepolicies" };
const restoreAnnotation = "captf.io/restore-state";

type Sealed = TerraformObject & {
  spec: { providerID?: string };
  status?: TerraformObject["status"] & { observedStateSerial?: number; stateBackups?: { serial: number }[]; lastRestoredSerial?: number };
};

/** The canary keys: a pbkdf2 passphrase for the machine, a literal aes_gcm key for the cluster. */
function stateKeys() {
  const passphrase = `canary-passphrase-${randomBytes(12).toString("hex")}`;
  const rawKey = [...randomBytes(32)];
  return {
    passphrase,
    machine: JSON.stringify({
      key_provider: { pbkdf2: { e2e: { passphrase } } },
      method: { aes_gcm: { e2e: { keys: "key_provider.pbkdf2.e2e" } } },
      state: { method: "method.aes_gcm.e2e" },
    }),
    // tofu decrypts with decryption_key alone: a literal key gives both.
    cluster: JSON.stringify({
      method: { aes_gcm: { raw: { keys: { encryption_key: rawKey, decryption_key: rawKey } } } },
      state: { method: "method.aes_gcm.raw" },
    }),
  };
}

/** The objects of the namespace: identity, policy key, key Secrets, the Cluster of the no-op modules and one machine. */
function signedObjects(images: { cluster: string; machine: string }, keys: ReturnType<typeof stateKeys>, publicKey: string) {
  const meta = (name: string) => ({ name, namespace: at.namespace });
  const encrypted = (secret: string) => ({ stateEncryption: { secretRef: { name: secret } } });
  const bootstrap = `${at.cluster}-bootstrap`;
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: at.namespace, labels: { "captf.io/signed-modules": "e2e" } } },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "signed-state", namespace: managerNamespace },
      stringData: { NOOP_API_TOKEN: "x" },
    },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "e2e-module-keys", namespace: managerNamespace },
      stringData: { "cosign.pub": publicKey },
    },
    {
      apiVersion: `${infraApi.group}/${infraApi.version}`,
      kind: "TerraformClusterIdentity",
      metadata: { name: "signed-state" },
      spec: {
        secretRef: { name: "signed-state", namespace: managerNamespace },
        requiredKeys: ["NOOP_API_TOKEN"],
        allowedNamespaces: { list: [at.namespace] },
      },
    },
    {
      apiVersion: `${infraApi.group}/${infraApi.version}`,
      kind: "TerraformModulePolicy",
      metadata: { name: policyName },
      spec: {
        namespaceSelector: { matchLabels: { "captf.io/signed-modules": "e2e" } },
        images: [{ glob: `${images.machine.slice(0, images.machine.indexOf("/"))}/e2e-signed/*` }],
        authorities: [{ name: "release", key: { secretRef: { namespace: managerNamespace, name: "e2e-module-keys" } } }],
      },
    },
    { apiVersion: "v1", kind: "Secret", metadata: meta("machine-state-key"), stringData: { TF_ENCRYPTION: keys.machine } },
    { apiVersion: "v1", kind: "Secret", metadata: meta("cluster-state-key"), stringData: { TF_ENCRYPTION: keys.cluster } },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta(bootstrap),
      type: "cluster.x-k8s.io/secret",
      stringData: { format: "cloud-config", value: "#cloud-config\n" },
    },
    {
      apiVersion: `${capiApi.group}/${capiApi.version}`,
      kind: "Cluster",
      metadata: meta(at.cluster),
      spec: {
        controlPlaneRef: { apiGroup: "controlplane.e2e.captf.io", kind: "StandInControlPlane", name: at.cluster },
        infrastructureRef: { apiGroup: infraApi.group, kind: "TerraformCluster", name: at.cluster },
      },
    },
    {
      apiVersion: `${infraApi.group}/${infraApi.version}`,
      kind: "TerraformCluster",
      metadata: meta(at.cluster),
      spec: { source: { image: images.cluster }, identityRef: { name: "signed-state" }, ...encrypted("cluster-state-key") },
    },
    {
      apiVersion: "controlplane.e2e.captf.io/v1alpha1",
      kind: "StandInControlPlane",
      metadata: meta(at.cluster),
      spec: { version: "v1.36.3" },
    },
    {
      apiVersion: `${infraApi.group}/${infraApi.version}`,
      kind: "TerraformMachineTemplate",
      metadata: meta(`${at.cluster}-md-0`),
      spec: { template: { spec: { source: { image: images.machine }, ...encrypted("machine-state-key") } } },
    },
    {
      apiVersion: `${capiApi.group}/${capiApi.version}`,
      kind: "MachineDeployment",
      metadata: meta(`${at.cluster}-md-0`),
      spec: {
        clusterName: at.cluster,
        replicas: 1,
        selector: { matchLabels: { "cluster.x-k8s.io/deployment-name": `${at.cluster}-md-0` } },
        template: {
          metadata: { labels: { "cluster.x-k8s.io/deployment-name": `${at.cluster}-md-0` } },
          spec: {
            clusterName: at.cluster,
            version: "v1.36.3",
            bootstrap: { dataSecretName: bootstrap },
            infrastructureRef: { apiGroup: infraApi.group, kind: "TerraformMachineTemplate", name: `${at.cluster}-md-0` },
          },
        },
      },
    },
  ] as k8s.KubernetesObject[];
}

/** The digest a tag of the loopback registry names now. */
async function digestOf(image: string): Promise<string> {
  const source = new RegistrySource(parseRegistryReference(image), { insecure: false, credentials: undefined, credentialsOrigin: "none" });
  return (await source.root()).digest;
}

const conditionOf = (object: TerraformObject | undefined, type: string): Condition | undefined =>
  object?.status?.conditions?.find((condition) => condition.type === type);

/** The state the kubernetes backend stores in a Secret, as text (gzip, base64). */
const storedState = (secret: k8s.V1Secret) => gunzipSync(Buffer.from(secret.data!.tfstate!, "base64")).toString("utf8");

export const signedEncryptedState: Scenario = (shared) => {
  const { waitReady, progressTable } = clusterctlClusters(shared);
  /** Waits as waitFor does; a timeout says where the namespace's objects are, their conditions, and the manager's last lines. */
  const waitWithin = async <T>(what: string, check: () => Promise<T | undefined>, timeoutMillis = 300_000): Promise<T> =>
    waitFor(check, timeoutMillis, what).catch(async (error) => {
      const objects = await Promise.all(
        ["terraformclusters", "terraformmachines"].map(async (plural) =>
          JSON.stringify(
            (
              (await shared.custom.listNamespacedCustomObject({ ...infraApi, namespace: at.namespace, plural })) as CustomObjectList<Sealed>
            ).items.map((object) => ({ name: object.metadata.name, conditions: object.status?.conditions })),
          ),
        ),
      );
      const manager = (await shared.plane.managerLog()).split("\n").filter((line) => line.includes(at.namespace));
      throw new Error(
        `${(error as Error).message}\nnow:\n${await progressTable(at)}\n${objects.join("\n")}\n` +
          `manager:\n${manager.slice(-30).join("\n")}`,
      );
    });

  it(
    "holds an unsigned module image, runs the cosign-signed digest, and keeps the state encrypted from first apply through a " +
      "restore to destroy",
    async () => {
      const { plane, custom, core, batch, events } = shared;
      const dir = mkdtempSync(join(tmpdir(), "captf-e2e-signed-"));
      const keys = stateKeys();
      const layout = join(plane.workDir, "oci");
      const images = {
        cluster: `${plane.images.registry}/e2e-signed/noop-cluster:v1`,
        machine: `${plane.images.registry}/e2e-signed/noop-machine:v1`,
      };
      // The plane's no-op module images under a repository of their own: signatures here touch nothing of the demo's.
      pushImage(layout, `cluster-${moduleTag}`, images.cluster);
      pushImage(layout, `machine-${moduleTag}`, images.machine);
      const digests = { cluster: await digestOf(images.cluster), machine: await digestOf(images.machine) };
      const release = cosignKeyPair(dir, "ecdsa-p256", "release");
      const pinned = (image: string, digest: string) => `${image.slice(0, image.lastIndexOf(":"))}@${digest}`;
      await cosignSign(release, pinned(images.cluster, digests.cluster), "tag", dir);

      const listed = async (plural: string) =>
        ((await custom.listNamespacedCustomObject({ ...infraApi, namespace: at.namespace, plural })) as CustomObjectList<Sealed>).items;
      const machine = async () => (await listed("terraformmachines"))[0];
      const jobsOf = async (name: string) =>
        (await batch.listNamespacedJob({ namespace: at.namespace })).items.filter(
          (job) => job.metadata?.ownerReferences?.[0]?.name === name,
        );
      const reasonsOf = async (name: string) =>
        (await events.listNamespacedEvent({ namespace: at.namespace, fieldSelector: `regarding.name=${name}` })).items.map(
          (event) => event.reason,
        );
      const sourceImages = new Set<string>();
      const noteImages = async () => {
        for (const job of (await batch.listNamespacedJob({ namespace: at.namespace })).items)
          sourceImages.add(job.spec!.template.spec!.containers.find((container) => container.name === "source")!.image!);
      };
      try {
        await applyObjects(plane.applier, signedObjects(images, keys, readFileSync(release.publicKey, "utf8")));

        // The machine's image is unsigned: held with no Job, while the signed cluster runs.
        const held = await waitWithin("the machine held: ImageVerified False/SignatureMissing", async () => {
          const current = await machine();
          return conditionOf(current, "ImageVerified")?.reason === "SignatureMissing" ? current : undefined;
        });
        const machineName = held.metadata.name;
        expect(conditionOf(held, "ImageVerified")).toMatchObject({ status: "False", message: expect.stringContaining(digests.machine) });
        expect(await jobsOf(machineName)).toEqual([]);
        expect(await reasonsOf(machineName)).toContain("ImageVerificationFailed");

        // Signed by the policy's key: picked up by a later pass (no restart) and run by digest.
        await cosignSign(release, pinned(images.machine, digests.machine), "tag", dir);
        await waitReady(at);
        await noteImages();
        const applied = (await machine())!;
        expect(conditionOf(applied, "ImageVerified")).toMatchObject({
          status: "True",
          reason: "Verified",
          message: expect.stringContaining(`signed by key release of TerraformModulePolicy ${policyName}`),
        });
        const [cluster] = await listed("terraformclusters");
        expect(conditionOf(cluster, "ImageVerified")).toMatchObject({ status: "True", reason: "Verified" });
        expect(await reasonsOf(machineName)).toContain("ImageVerified");

        // Encrypted from the first apply: the state Secrets and the backup hold ciphertext only; captf read the serial and outputs.
        const stateSecrets = async () =>
          (await core.listNamespacedSecret({ namespace: at.namespace, labelSelector: "tfstate=true" })).items;
        const stateOf = async (name: string) =>
          (await stateSecrets()).find((secret) => secret.metadata!.ownerReferences?.some((owner) => owner.name === name));
        const expectEncrypted = async (name: string) => {
          const stored = storedState((await stateOf(name))!);
          expect(JSON.parse(stored)).toMatchObject({ encryption_version: "v0", encrypted_data: expect.any(String) });
          expect(stored).not.toContain("noop:///");
        };
        await expectEncrypted(machineName);
        await expectEncrypted(at.cluster);
        expect(applied.spec.providerID).toMatch(/^noop:\/\/\//);
        const serial = applied.status!.stateBackups![0]!.serial;
        expect(applied.status!.observedStateSerial).toBe(serial);

        // The state is lost: the machine is held on StateLost and restored from its encrypted backup.
        const lost = (await stateOf(machineName))!.metadata!.name!;
        await core.deleteNamespacedSecret({ namespace: at.namespace, name: lost });
        await custom.patchNamespacedCustomObject(
          {
            ...infraApi,
            namespace: at.namespace,
            plural: "terraformmachines",
            name: machineName,
            body: { metadata: { annotations: { [restoreAnnotation]: String(serial) } } },
          },
          mergePatch,
        );
        const restored = await waitWithin("the machine's state restored from its backup", async () => {
          await noteImages();
          const current = await machine();
          return conditionOf(current, "RestoreJobSucceeded")?.status === "True" && conditionOf(current, "StateReadable")?.status === "True"
            ? current
            : undefined;
        });
        expect(conditionOf(restored, "RestoreJobSucceeded")).toMatchObject({ reason: "StateRestored" });
        expect(restored.status!.lastRestoredSerial).toBe(serial);
        expect(restored.metadata.annotations?.[restoreAnnotation]).toBeUndefined();
        await expectEncrypted(machineName);
        expect(await reasonsOf(machineName)).toContain("StateRestored");
        await waitReady(at);

        // Deleted: each object destroyed by a verified Job, then nothing of the namespace's state is left.
        await custom.deleteNamespacedCustomObject({ ...capiApi, namespace: at.namespace, plural: "clusters", name: at.cluster });
        await waitWithin("the signed cluster's objects gone", async () => {
          await noteImages();
          return Object.keys((await snapshot(plane.kubeConfig, at.namespace)).objects).length === 0 ? true : undefined;
        });
        expect(await stateSecrets()).toEqual([]);
        const destroyed = (await core.listNamespacedEvent({ namespace: at.namespace })).items.filter(
          (event) => event.reason === "Destroyed",
        );
        expect(destroyed.map((event) => event.involvedObject.kind).sort()).toEqual(["TerraformCluster", "TerraformMachine"]);
        // Every Job (apply, restore, destroy) ran a verified digest, never the tag.
        expect([...sourceImages].sort()).toEqual([pinned(images.cluster, digests.cluster), pinned(images.machine, digests.machine)].sort());

        // Neither key reached a log, an event, a status, a Job or a Pod.
        const places = [
          await plane.managerLog(),
          ...readdirSync(join(plane.kubelet.workDir, "logs")).map((file) =>
            readFileSync(join(plane.kubelet.workDir, "logs", file), "utf8"),
          ),
          JSON.stringify((await core.listEventForAllNamespaces()).items),
          JSON.stringify((await events.listEventForAllNamespaces()).items),
          JSON.stringify((await batch.listJobForAllNamespaces()).items),
          JSON.stringify((await core.listPodForAllNamespaces()).items),
        ];
        for (const canary of [keys.passphrase, keys.machine, keys.cluster, Buffer.from(keys.machine).toString("base64")])
          expect(places.filter((text) => text.includes(canary))).toEqual([]);
      } finally {
        await custom.deleteClusterCustomObject({ ...policyApi, name: policyName }).catch(() => undefined);
        await core.deleteNamespace({ name: at.namespace }).catch(() => undefined);
        for (const name of ["signed-state", "e2e-module-keys"])
          await core.deleteNamespacedSecret({ namespace: managerNamespace, name }).catch(() => undefined);
        await custom
          .deleteClusterCustomObject({ ...infraApi, plural: "terraformclusteridentities", name: "signed-state" })
          .catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    scenarioTimeout,
  );
};
