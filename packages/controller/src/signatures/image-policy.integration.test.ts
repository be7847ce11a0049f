// TerraformModulePolicy on the real API server: the manager's pass verifies the machine's image with real cosign signatures
// in the loopback registry before it creates a Job, holds it while the signature is missing or by an unknown key, picks
// up a key added to the policy (a Secret) without a restart, runs the verified digest, and resolves a re-pushed tag anew.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { Registry } from "prom-client";
import {
  buildImage,
  cosignKeyPair,
  cosignSign,
  describeWithTools,
  pushImage,
  startLocalRegistry,
  waitFor,
  type CosignKeyPair,
} from "@captf/testkit";
import { parseRegistryReference, RegistrySource } from "@captf/contract/oci";
import { machineAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { condition, createMachine, readMachine } from "../reconcile/machine-fixture.test-support.js";
import { mergePatchOptions, planeReconcilerDeps, preparePlane, type PlaneClients } from "../reconcile/plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "../reconcile/workspace-reconciler.js";
import { policyImageVerifier } from "./image-verifier.js";

const namespace = `sig-${Date.now().toString(36)}`;
const policyName = `modules-${namespace}`;
const dir = mkdtempSync(join(tmpdir(), "captf-image-policy-"));
const layout = join(dir, "layout");
const policyGroup = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", plural: "terraformmodulepolicies" };
let plane: PlaneClients;
let registry: Awaited<ReturnType<typeof startLocalRegistry>>;
let release: CosignKeyPair;
let stranger: CosignKeyPair;
let deps: ReconcilerDeps;
let metrics: Registry;
let eventsApi: ReturnType<typeof planeReconcilerDeps>["eventsApi"];

/** Pushes an image of its own content under `<registry>/modules/<name>:v1`; returns its digest. */
async function pushModule(name: string, content: string): Promise<string> {
  buildImage(layout, content, { files: { "/captf/module/main.tf": `# ${content}\n` }, user: "65532" });
  pushImage(layout, content, `${registry.host}/modules/${name}:v1`);
  const reference = parseRegistryReference(`${registry.host}/modules/${name}:v1`);
  return (await new RegistrySource(reference, { insecure: false, credentials: undefined, credentialsOrigin: "none" }).root()).digest;
}

/** Passes of the machine until its ImageVerified condition has `reason` or a Job started; the last pass's action. */
async function passUntil(name: string, done: (action: string) => boolean): Promise<string> {
  let action = "";
  for (let pass = 0; pass < 6 && !done(action); pass++) action = (await reconcileWorkspace(deps, machineAdapter, namespace, name)).action;
  return action;
}

async function jobsOf(name: string) {
  return (await plane.batch.listNamespacedJob({ namespace })).items.filter((job) => job.metadata?.name?.includes(`-${name}-`));
}

async function eventReasons(name: string): Promise<string[]> {
  const events = await eventsApi.listNamespacedEvent({ namespace, fieldSelector: `regarding.name=${name}` });
  return events.items.map((event) => event.reason ?? "");
}

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "cosign", "docker-registry", "umoci", "skopeo"],
  "TerraformModulePolicy before a Job runs",
  () => {
    beforeAll(async () => {
      plane = await preparePlane(namespace);
      registry = await startLocalRegistry();
      release = cosignKeyPair(dir, "ecdsa-p256", "release");
      stranger = cosignKeyPair(dir, "ed25519", "stranger");
      await plane.core.patchNamespace(
        { name: namespace, body: { metadata: { labels: { "captf.io/signed-modules": namespace } } } },
        mergePatchOptions(),
      );
      // Governs this namespace only; trusts the stranger's key inline, and nothing else yet.
      await plane.custom.createClusterCustomObject({
        ...policyGroup,
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformModulePolicy",
          metadata: { name: policyName },
          spec: {
            namespaceSelector: { matchLabels: { "captf.io/signed-modules": namespace } },
            images: [{ glob: `${registry.host}/modules/*` }],
            authorities: [{ name: "stranger", key: { data: readFileSync(stranger.publicKey, "utf8") } }],
          },
        },
      });
      metrics = new Registry();
      const plain = planeReconcilerDeps(plane, "image-policy-test");
      eventsApi = plain.eventsApi;
      deps = { ...plain.deps, metrics: new CaptfMetrics(metrics), imageVerifier: policyImageVerifier({ client: plane.client }) };
    }, 240_000);
    afterAll(async () => {
      await plane?.custom.deleteClusterCustomObject({ ...policyGroup, name: policyName }).catch(() => undefined);
      await registry?.stop();
    });

    it("holds an unsigned image, then one by an unknown key, and runs the digest once a key of the policy signed it", async () => {
      const digest = await pushModule("noop", "noop-v1");
      await createMachine(plane, namespace, "m-signed", `${registry.host}/modules/noop:v1`);

      expect(await passUntil("m-signed", (action) => action.includes("SignatureMissing"))).toBe("waiting: SignatureMissing");
      let machine = await readMachine(plane, namespace, "m-signed");
      expect(condition(machine, "ImageVerified")).toMatchObject({ status: "False", reason: "SignatureMissing" });
      expect(condition(machine, "ImageVerified")?.message).toContain(digest);
      expect(await jobsOf("m-signed")).toEqual([]);

      // Signed, but with a key the policy does not trust.
      await cosignSign(release, `${registry.host}/modules/noop@${digest}`, "tag", dir);
      expect(await passUntil("m-signed", (action) => action.includes("KeyUnknown"))).toBe("waiting: KeyUnknown");
      machine = await readMachine(plane, namespace, "m-signed");
      expect(condition(machine, "ImageVerified")).toMatchObject({ status: "False", reason: "KeyUnknown" });
      expect(await jobsOf("m-signed")).toEqual([]);

      // The administrator adds the release key from a Secret: the next pass verifies, no restart.
      await plane.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: "module-keys" }, stringData: { "cosign.pub": readFileSync(release.publicKey, "utf8") } },
      });
      await plane.custom.patchClusterCustomObject({
        ...policyGroup,
        name: policyName,
        body: [
          { op: "add", path: "/spec/authorities/-", value: { name: "release", key: { secretRef: { name: "module-keys", namespace } } } },
        ],
      });
      expect(await passUntil("m-signed", (action) => action.startsWith("started"))).toMatch(/^started apply/);
      machine = await readMachine(plane, namespace, "m-signed");
      expect(condition(machine, "ImageVerified")).toMatchObject({ status: "True", reason: "Verified" });
      expect(condition(machine, "ImageVerified")?.message).toContain(`signed by key release of TerraformModulePolicy ${policyName}`);
      const [job] = await jobsOf("m-signed");
      // The Job runs the digest that verified, not the tag.
      expect(job?.spec?.template.spec?.containers.find((container) => container.name === "source")?.image).toBe(
        `${registry.host}/modules/noop@${digest}`,
      );
      // Events are written after the pass, without waiting for them.
      await waitFor(async () => ((await eventReasons("m-signed")).includes("ImageVerified") ? true : undefined), 30_000, "ImageVerified");
      expect(await eventReasons("m-signed")).toEqual(expect.arrayContaining(["ImageVerificationFailed", "ImageVerified"]));
      expect(
        await seriesValue(metrics, "captf_image_verifications_total", { kind: "TerraformMachine", result: "missing" }),
      ).toBeGreaterThan(0);
      expect(
        await seriesValue(metrics, "captf_image_verifications_total", { kind: "TerraformMachine", result: "unknown_key" }),
      ).toBeGreaterThan(0);
      expect(await seriesValue(metrics, "captf_image_verifications_total", { kind: "TerraformMachine", result: "verified" })).toBe(1);
    }, 300_000);

    it("resolves a re-pushed tag anew: the new digest's missing signature holds a new machine", async () => {
      const signed = await pushModule("moving", "moving-v1");
      await cosignSign(release, `${registry.host}/modules/moving@${signed}`, "tag", dir);
      const repushed = await pushModule("moving", "moving-v2");
      expect(repushed).not.toBe(signed);
      await createMachine(plane, namespace, "m-moved", `${registry.host}/modules/moving:v1`);
      expect(await passUntil("m-moved", (action) => action.includes("SignatureMissing"))).toBe("waiting: SignatureMissing");
      expect(condition(await readMachine(plane, namespace, "m-moved"), "ImageVerified")?.message).toContain(repushed);
      expect(await jobsOf("m-moved")).toEqual([]);
    }, 300_000);

    it("is refused by the API server with a key both inline and in a Secret, or an authority without a key", async () => {
      const create = (authority: Record<string, unknown>) =>
        plane.custom.createClusterCustomObject({
          ...policyGroup,
          body: {
            apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
            kind: "TerraformModulePolicy",
            metadata: { name: `invalid-${namespace}` },
            spec: { images: [{ glob: "registry.example.com/**" }], authorities: [authority] },
          },
        });
      const both = { name: "both", key: { data: "PEM", secretRef: { name: "keys", namespace } } };
      await expect(create(both)).rejects.toMatchObject({
        code: 422,
        body: expect.stringContaining("set exactly one of data and secretRef"),
      });
      await expect(create({ name: "none" })).rejects.toMatchObject({ code: 422, body: expect.stringContaining("an authority needs key") });
    });

    it("refuses an image the policy's images do not match", async () => {
      await createMachine(plane, namespace, "m-elsewhere", "registry.invalid/other/noop:v1");
      expect(await passUntil("m-elsewhere", (action) => action.includes("ImageNotAllowed"))).toBe("waiting: ImageNotAllowed");
      expect(condition(await readMachine(plane, namespace, "m-elsewhere"), "ImageVerified")).toMatchObject({
        status: "False",
        reason: "ImageNotAllowed",
      });
      expect(await jobsOf("m-elsewhere")).toEqual([]);
    }, 300_000);
  },
);
