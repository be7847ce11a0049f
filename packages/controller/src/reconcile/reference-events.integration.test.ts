import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { runSecretName } from "../jobs/build-job.js";
import { clusterAdapter, machineAdapter } from "../kinds/adapters.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createMachine, readMachine } from "./machine-fixture.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  extendedClusterModule,
  mergePatchOptions,
  managerEventsOnce,
  preparePlane,
  skewablePasses,
  type PlaneClients,
} from "./plane.test-support.js";
import { runLeaseName } from "./run-lease.js";

const machineImage = "registry.invalid/captf/fallback-machine:v1";
// What the executor reports as the image ID of a Job it ran: the digest the apply pins.
const pinnedDigest = `registry.invalid/captf/fallback-machine@sha256:${"0".repeat(64)}`;
// A machine whose tag the registry loses too, after its apply.
const lostImage = "registry.invalid/captf/lost-machine:v1";
const lostDigest = `registry.invalid/captf/lost-machine@sha256:${"0".repeat(64)}`;
const clusterImage = "registry.invalid/captf/mismatch-cluster:v1";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";
const holdFinalizer = "test.captf.io/hold";
// The kubelet's message is the registry's answer, which may carry what a pull secret sent: never copied into a note or the status.
const pullCanary = "pull-secret-canary-7f3a";
const pullMessage = `failed to pull and unpack image "${pinnedDigest}": 404 Not Found (sent Authorization: Basic ${pullCanary})`;

// Two events of the public reference, on the real API server with real Jobs, the real runner and OpenTofu: a destroy whose pinned
// digest the registry no longer serves falls back to the reference the apply ran (ImagePullFallback), and a destroy that renders the
// inputs of a failed apply, not those the state records, says so (DestroyInputsMismatch).
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "the reference's image and destroy events", () => {
  const namespace = `refevents-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let passes: ReturnType<typeof skewablePasses>;
  let executor: JobExecutor;
  let clusterModule = "";
  // What the registry does not serve (a test may lose an image), and the kubelet's answer.
  const unpullable = new Map<string, { reason: string; message: string }>();

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    // Tests move time forward by skewing the pass clock.
    passes = skewablePasses(plane, namespace, "reference-events-test");
    // The no-op cluster module with a resource `size` updates, whose apply fails after the update while a fail marker is there: its
    // output is known only once applied, so the check runs after the change, as a provider's error after a partial apply would.
    clusterModule = extendedClusterModule("captf-reference-events-module-", {
      "sized.tf": [
        'variable "size" {\n  type    = string\n  default = "1"\n}\n\n',
        'resource "terraform_data" "sized" {\n  input = var.size\n  lifecycle {\n    postcondition {\n',
        '      condition     = self.output == "1" || !fileexists("${path.module}/../fail-${var.captf_object.name}")\n',
        '      error_message = "the test asked this apply to fail"\n    }\n  }\n}\n',
      ].join(""),
    });
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: {
        [machineImage]: noopModuleDirectory("machine"),
        [lostImage]: noopModuleDirectory("machine"),
        [clusterImage]: clusterModule,
      },
      unpullable,
    });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (clusterModule) rmSync(clusterModule, { recursive: true, force: true });
  });

  const pass = async (adapter: typeof machineAdapter | typeof clusterAdapter, name: string, ahead = 0) =>
    (await passes.pass(adapter, name, ahead)).action;
  const runJobs = () => allJobsFinished(plane.batch, namespace, executor);
  const jobsOf = async (name: string, op: string) =>
    (
      await plane.batch.listNamespacedJob({ namespace, labelSelector: `captf.infrastructure.cluster.x-k8s.io/owner-name=${name}` })
    ).items.filter((job) => job.metadata?.labels?.[opLabel] === op);
  const sourceImage = (job: k8s.V1Job) => job.spec?.template.spec?.containers.find((container) => container.name === "source")?.image;
  const durableNotes = async (role: "machine" | "cluster", name: string) =>
    (await plane.core.readNamespacedSecret({ namespace, name: durableInputsSecretName(role, name) })).metadata?.annotations ?? {};
  const absent = (read: Promise<unknown>) =>
    read.then(
      () => false,
      (error: { code?: number }) => (error.code === 404 ? true : Promise.reject(error)),
    );
  /** The manager's events of `reason` about one object, once there are `count` (events are recorded in the background). */
  const eventNotes = async (name: string, reason: string, count = 1) => {
    const ofReason = (events: k8s.EventsV1Event[]) => events.filter((event) => event.reason === reason);
    const what = `${count} ${reason} event(s) about ${name}`;
    const events = await managerEventsOnce(passes.eventsApi, namespace, name, (all) => ofReason(all).length >= count, what);
    return ofReason(events).map((event) => event.note ?? "");
  };
  /** Passes (running the Jobs they start) until `until` holds for the pass's action; the actions. */
  async function passUntil(adapter: typeof machineAdapter | typeof clusterAdapter, name: string, until: RegExp): Promise<string[]> {
    const actions: string[] = [];
    for (let count = 0; count < 12; count++) {
      const action = await pass(adapter, name);
      actions.push(action);
      if (until.test(action)) return actions;
      await runJobs();
    }
    throw new Error(`${name} never reached ${until}: ${actions.join(" | ")}`);
  }

  it("destroys a machine whose pinned digest cannot be pulled with the reference its apply ran (ImagePullFallback), once the " +
    "Job it deleted is gone", async () => {
    // The registry garbage collected the digest the machine's apply pins: the kubelet cannot pull it.
    unpullable.set(pinnedDigest, { reason: "ErrImagePull", message: pullMessage });
    await createMachine(plane, namespace, "gc", machineImage);
    await passUntil(machineAdapter, "gc", /^started apply/);
    await runJobs();
    await passUntil(machineAdapter, "gc", /^UpToDate/);
    expect((await readMachine(plane, namespace, "gc")).status).toMatchObject({ initialization: { provisioned: true } });
    expect(await durableNotes("machine", "gc")).toMatchObject({ "captf.io/image": machineImage, "captf.io/image-digest": pinnedDigest });

    await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "gc" });
    await passUntil(machineAdapter, "gc", /^started destroy \(Deleting\)/);
    const [stuck] = await jobsOf("gc", "destroy");
    expect(sourceImage(stuck!)).toBe(pinnedDigest);
    const jobName = stuck!.metadata!.name!;
    // Kept terminating once deleted, as a Job with a finalizer of someone else's is.
    await plane.batch.patchNamespacedJob(
      { name: jobName, namespace, body: { metadata: { finalizers: [holdFinalizer] } } },
      mergePatchOptions(),
    );
    // Like a kubelet that cannot pull the digest: the Pod stays Pending, its container waiting.
    await waitFor(
      async () => {
        await executor.runPending();
        const pods = (await plane.core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` })).items;
        return pods[0]?.status?.containerStatuses?.[0]?.state?.waiting ? true : undefined;
      },
      60_000,
      `the Pod of ${jobName} waiting on its image`,
    );

    // Within the pull deadline the Job is left to the kubelet's retries.
    expect(await pass(machineAdapter, "gc", 60_000)).toBe("JobActive");
    expect((await durableNotes("machine", "gc"))["captf.io/unpullable-images"]).toBeUndefined();

    // Past it: the digest is recorded unpullable, the Job, its per-run Secret and its run lease go; the destroy runs the reference next.
    expect(await pass(machineAdapter, "gc", 2 * 60_000 + 5_000)).toBe(
      `deleted Job ${jobName}: ${pinnedDigest} was not pulled; destroy runs ${machineImage} next`,
    );
    expect((await durableNotes("machine", "gc"))["captf.io/unpullable-images"]).toBe(JSON.stringify([pinnedDigest]));
    expect(await eventNotes("gc", "ImagePullFallback")).toEqual([
      `could not pull ${pinnedDigest} (ErrImagePull): deleted destroy Job ${jobName}; retrying destroy with ${machineImage}`,
    ]);
    expect(JSON.stringify((await readMachine(plane, namespace, "gc")).status)).not.toContain(pullCanary);
    const terminating = await plane.batch.readNamespacedJob({ name: jobName, namespace });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    expect(await absent(plane.core.readNamespacedSecret({ namespace, name: runSecretName(jobName) }))).toBe(true);
    const suffix = stateSecretSuffix({ role: "machine", namespace, name: "gc" });
    expect(await absent(plane.coordination.readNamespacedLease({ namespace, name: runLeaseName(suffix) }))).toBe(true);

    // While the deleted Job is still there, nothing starts under its name and nothing is made for it.
    expect(await pass(machineAdapter, "gc", 3 * 60_000)).toBe("JobActive");
    expect(await absent(plane.core.readNamespacedSecret({ namespace, name: runSecretName(jobName) }))).toBe(true);
    expect((await jobsOf("gc", "destroy")).map((job) => job.metadata?.uid)).toEqual([terminating.metadata?.uid]);

    await plane.batch.patchNamespacedJob({ name: jobName, namespace, body: { metadata: { finalizers: null } } }, mergePatchOptions());
    await waitFor(async () => ((await absent(plane.batch.readNamespacedJob({ name: jobName, namespace }))) ? true : undefined));
    // The same Job name, a new Job, on the reference the apply ran: it is pulled, and destroys.
    expect(await pass(machineAdapter, "gc")).toMatch(new RegExp(`^started destroy \\(Deleting\\) as ${jobName}$`));
    const [retried] = await jobsOf("gc", "destroy");
    expect(retried!.metadata?.uid).not.toBe(terminating.metadata?.uid);
    expect(sourceImage(retried!)).toBe(machineImage);
    const created =
      `started destroy attempt 1 as Job ${jobName} with image ${machineImage} (falling back: ${pinnedDigest} could not be pulled), ` +
      "because Deleting";
    expect(await waitFor(async () => (await eventNotes("gc", "JobCreated")).find((note) => note === created))).toBe(created);
    await runJobs();
    const actions = await passUntil(machineAdapter, "gc", /^removed finalizer$/);
    expect(actions).not.toContainEqual(expect.stringMatching(/^started/));
    expect(await eventNotes("gc", "Destroyed")).toHaveLength(1);
    expect(await absent(plane.core.readNamespacedSecret({ namespace, name: `tfstate-default-${suffix}` }))).toBe(true);
    expect(await absent(readMachine(plane, namespace, "gc"))).toBe(true);
    // One fallback for the one Job; the kubelet's message is in no note.
    expect(await eventNotes("gc", "ImagePullFallback")).toHaveLength(1);
    const notes = (await passes.eventsApi.listNamespacedEvent({ namespace })).items.filter((event) => event.regarding?.name === "gc");
    expect(JSON.stringify(notes)).not.toContain(pullCanary);
  }, 240_000);

  it("fails a destroy with ImagePullFailed once no image is left to fall back to, and destroys after its backoff when the registry " +
    "serves the reference again", async () => {
    await createMachine(plane, namespace, "lost", lostImage);
    await passUntil(machineAdapter, "lost", /^started apply/);
    await runJobs();
    await passUntil(machineAdapter, "lost", /^UpToDate/);
    // The registry loses the digest and the tag: the chain is the digest, then the tag (the spec's image is the same).
    for (const image of [lostDigest, lostImage]) unpullable.set(image, { reason: "ImagePullBackOff", message: "not found" });
    const stall = async (op: string) => {
      const [job] = await jobsOf("lost", op);
      await waitFor(async () => {
        await executor.runPending();
        const pods = (await plane.core.listNamespacedPod({ namespace, labelSelector: `job-name=${job!.metadata!.name}` })).items;
        return pods.some((pod) => pod.metadata?.ownerReferences?.[0]?.uid === job!.metadata?.uid && pod.status?.containerStatuses)
          ? true
          : undefined;
      });
      return job!;
    };

    await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "lost" });
    await passUntil(machineAdapter, "lost", /^started destroy \(Deleting\)/);
    const first = await stall("destroy");
    expect(sourceImage(first)).toBe(lostDigest);
    expect(await pass(machineAdapter, "lost", 2 * 60_000 + 5_000)).toMatch(/^deleted Job .*; destroy runs registry.invalid\/captf\/lost-/);
    await waitFor(async () =>
      (await absent(plane.batch.readNamespacedJob({ name: first.metadata!.name!, namespace }))) ? true : undefined,
    );
    expect(await pass(machineAdapter, "lost")).toMatch(/^started destroy \(Deleting\)/);
    const last = await stall("destroy");
    expect(sourceImage(last)).toBe(lostImage);

    // The last image: no fallback, the Job fails as any Job whose image is not pulled, and the destroy backs off.
    expect(await pass(machineAdapter, "lost", 2 * 60_000 + 5_000)).toMatch(/^failing Job .*ImagePullBackOff/);
    await runJobs();
    expect(await pass(machineAdapter, "lost")).toBe("DeletingBackoff");
    const machine = await readMachine(plane, namespace, "lost");
    expect(machine.status?.conditions?.find((c) => c.type === "ApplyJobSucceeded")).toMatchObject({
      status: "False",
      reason: "ImagePullFailed",
      message: expect.stringContaining(lostImage),
    });
    expect((await durableNotes("machine", "lost"))["captf.io/unpullable-images"]).toBe(JSON.stringify([lostDigest]));
    expect(await eventNotes("lost", "ImagePullFallback")).toEqual([
      `could not pull ${lostDigest} (ImagePullBackOff): deleted destroy Job ${first.metadata!.name}; retrying destroy with ${lostImage}`,
    ]);

    // The tag is pushed again: after the backoff the destroy runs it (the digest stays skipped) and the machine goes.
    unpullable.delete(lostImage);
    expect(await pass(machineAdapter, "lost", 61_000)).toMatch(/^started destroy \(Deleting\)/);
    const [retried] = (await jobsOf("lost", "destroy")).filter((job) => !job.status?.conditions?.length);
    expect(sourceImage(retried!)).toBe(lostImage);
    // Both destroys after the fallback say so: the first on the tag, and the retry after its backoff.
    const fallingBack = `with image ${lostImage} (falling back: ${lostDigest} could not be pulled), because Deleting`;
    const expected = [
      `started destroy attempt 1 as Job ${first.metadata!.name} ${fallingBack}`,
      `started destroy attempt 2 as Job ${retried!.metadata!.name} ${fallingBack}`,
    ];
    const created = await waitFor(async () => {
      const notes = await eventNotes("lost", "JobCreated");
      return expected.every((note) => notes.includes(note)) ? notes : undefined;
    });
    expect(created).toEqual(expect.arrayContaining(expected));
    await runJobs();
    await passUntil(machineAdapter, "lost", /^removed finalizer$/);
    expect(await eventNotes("lost", "ImagePullFallback")).toHaveLength(1);
  }, 240_000);

  it("says a cluster's destroy renders the inputs of its failed apply, not those the state records (DestroyInputsMismatch)", async () => {
    await createTerraformCluster(plane, namespace, "mismatch", { source: { image: clusterImage } });
    await passUntil(clusterAdapter, "mismatch", /^started apply \(NoState\)/);
    await runJobs();
    expect(await pass(clusterAdapter, "mismatch")).toBe("UpToDate");
    const applied = (await durableNotes("cluster", "mismatch"))["captf.io/inputs-hash"]!;

    const failMarker = join(dirname(clusterModule), "fail-mismatch");
    writeFileSync(failMarker, "");
    try {
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "mismatch", body: { spec: { variables: { size: "2" } } } },
        mergePatchOptions(),
      );
      expect(await pass(clusterAdapter, "mismatch")).toMatch(/^started apply \(InputsChanged\)/);
      await runJobs();
      expect(await pass(clusterAdapter, "mismatch")).toBe("InputsChangedBackoff");
      // It failed in its apply step, after the update: the state holds the new size under the old inputs hash.
      const cluster = (await plane.custom.getNamespacedCustomObject({
        ...infra,
        namespace,
        plural: "terraformclusters",
        name: "mismatch",
      })) as { status?: { lastRun?: { error?: { step?: string } } } };
      expect(cluster.status?.lastRun?.error?.step).toBe("apply");
    } finally {
      rmSync(failMarker, { force: true });
    }
    const [failedApply] = (await jobsOf("mismatch", "apply")).filter((job) =>
      job.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True"),
    );
    const rendered = (await durableNotes("cluster", "mismatch"))["captf.io/inputs-hash"]!;
    expect(rendered).not.toBe(applied);
    expect(failedApply!.metadata?.annotations?.["captf.io/inputs-hash"]).toBe(rendered);

    await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "mismatch" });
    await passUntil(clusterAdapter, "mismatch", /^started destroy \(Deleting\)/);
    const [destroy] = await jobsOf("mismatch", "destroy");
    expect(await eventNotes("mismatch", "DestroyInputsMismatch")).toEqual([
      `destroy Job ${destroy!.metadata!.name} renders the inputs of apply Job ${failedApply!.metadata!.name}, which failed and may ` +
        `have changed resources (${rendered}); the state records ${applied}`,
    ]);
    await runJobs();
    await passUntil(clusterAdapter, "mismatch", /^removed finalizer$/);
    expect(await eventNotes("mismatch", "Destroyed")).toHaveLength(1);
    const suffix = stateSecretSuffix({ role: "cluster", namespace, name: "mismatch" });
    expect(await absent(plane.core.readNamespacedSecret({ namespace, name: `tfstate-default-${suffix}` }))).toBe(true);
  }, 240_000);
});
