// The pass's reads of Pods, Leases and bootstrap Secrets from the manager's caches, and their answer
// to cache lag: a read the cache cannot answer as fresh as it must be goes live.
import { describe, expect, it } from "@jest/globals";
import type { V1Job, V1Lease } from "@kubernetes/client-node";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeObject } from "../runtime/kube-client.js";
import { ReadCache } from "../runtime/read-cache.js";
import { fakeInformer, fakeServer } from "../runtime/read-cache.test-support.js";
import { apiError, fakeClient } from "../runtime/fake-client.test-support.js";
import { ensureCredentials, identityResourceType } from "../identity/ensure-credentials.js";
import { planMirror } from "../identity/credentials-mirror.js";
import { observeStateLock } from "../state/state-lock.js";
import { jobPod } from "./observe-jobs.js";
import { capiSecrets, readBootstrapSecret } from "./pass-reads.js";
import { cachedJob } from "./manager-cache.js";
import { buildJob, defaultJobEnvironment } from "../jobs/build-job.js";
import { acquireLease } from "./run-lease.js";

const job = (resourceVersion: string): V1Job => ({ metadata: { namespace: "ns", name: "captf-m-m-apply-a1-0291a5", resourceVersion } });
const pod = (resourceVersion: string, phase: string): KubeObject =>
  ({
    metadata: {
      namespace: "ns",
      name: "captf-m-m-apply-a1-0291a5-abcde",
      resourceVersion,
      labels: { "job-name": "captf-m-m-apply-a1-0291a5" },
    },
    status: { phase },
  }) as KubeObject;

describe("a Job's Pod", () => {
  it("comes from the Pod cache once it has seen the Job as read, else live", async () => {
    const pods = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.pod, { informer: pods, scoped: true });
    const client = fakeClient({});
    pods.put(pod("7", "Running"));
    server.objects.set("ns/pod", pod("8", "Succeeded"));
    // The Job finished at 9 after its Pod succeeded at 8: the cache, at 7, still shows the Pod running.
    expect((await jobPod({ client, cache }, "ns", job("9")))?.metadata?.resourceVersion).toBe("8");
    expect(server.reads).toEqual(["list"]);
    pods.put(pod("8", "Succeeded"));
    pods.resourceVersion = "9";
    expect((await jobPod({ client, cache }, "ns", job("9")))?.metadata?.resourceVersion).toBe("8");
    expect(server.reads).toEqual(["list"]);
  });
});

describe("the state lock", () => {
  const holder = "captf-m-m-apply-a1-0291a5-abcde";
  const lock: KubeObject = {
    metadata: {
      namespace: "ns",
      name: "lock-tfstate-default-s",
      resourceVersion: "20",
      annotations: { "app.terraform.io/lock-info": JSON.stringify({ ID: "lock-1", Who: `runner@${holder}` }) },
    },
    spec: { holderIdentity: "lock-1" },
  } as KubeObject;

  it("judges the runner pod from a Pod cache that has seen the lock taken; one that has not reads the pod live", async () => {
    const leases = fakeInformer();
    const pods = fakeInformer();
    const server = fakeServer();
    const clients = {
      client: fakeClient({}),
      cache: new ReadCache(server)
        .add(builtinTypes.lease, { informer: leases, scoped: true })
        .add(builtinTypes.pod, { informer: pods, scoped: true }),
    };
    leases.put(lock);
    server.objects.set(`ns/${holder}`, pod("18", "Running"));
    // The Pod cache lags the lock (at 5): the pod's absence there would call a live runner gone and force-unlock its lock.
    pods.resourceVersion = "5";
    expect(await observeStateLock(clients, "ns", "s", { role: "machine", name: "m" })).toEqual({ kind: "alive", pod: holder });
    expect(server.reads).toEqual([`get ${holder}`]);
    // Once the Pod cache is past the lock, the pod's absence there is an answer: the runner is gone, the lock stale.
    pods.resourceVersion = "21";
    expect(await observeStateLock(clients, "ns", "s", { role: "machine", name: "m" })).toEqual({
      kind: "stale",
      unlockId: "lock-1",
      pod: holder,
    });
    expect(server.reads).toEqual([`get ${holder}`]);
  });
});

describe("a run lease from the Lease cache", () => {
  const request = {
    kind: "run" as const,
    name: "captf-run-s",
    namespace: "ns",
    holder: "job-b",
    op: "apply" as const,
    owner: { kind: "TerraformMachine", name: "m", clusterName: "c" },
    backstopSeconds: 3600,
    now: Date.now(),
  };

  it(
    "is taken with the resourceVersion the cache shows: a stale cache loses to a conflict, it never overwrites a newer " + "lease",
    async () => {
      const leases = fakeInformer();
      const cache = new ReadCache(fakeServer()).add(builtinTypes.lease, { informer: leases, scoped: true });
      // The cache still shows the lease free (version 3); the server has it taken since, at version 4.
      leases.put({ metadata: { namespace: "ns", name: "captf-run-s", resourceVersion: "3" }, spec: {} } as KubeObject);
      const replaced: (string | undefined)[] = [];
      const client = fakeClient({
        "replace leases": async ({ body }) => {
          replaced.push((body as V1Lease).metadata?.resourceVersion);
          throw apiError(409, "the object has been modified", "Conflict");
        },
      });
      expect(await acquireLease({ client, cache }, request)).toEqual({
        acquired: false,
        holder: "",
        message: "another manager took it first",
      });
      expect(replaced).toEqual(["3"]);
    },
  );
});

describe("a bootstrap data Secret", () => {
  it("comes from the cache of Secrets labelled with a cluster, and live when that cache lacks it", async () => {
    const capi = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server)
      .add(builtinTypes.secret, { informer: fakeInformer(), scoped: true })
      .add(builtinTypes.secret, { informer: capi, scoped: true }, capiSecrets);
    capi.put({ metadata: { namespace: "ns", name: "m-bootstrap", resourceVersion: "2" }, data: { value: "Y2xvdWQ=" } } as KubeObject);
    server.objects.set("ns/unlabelled", {
      metadata: { namespace: "ns", name: "unlabelled", resourceVersion: "3" },
      data: { value: "eA==" },
    } as KubeObject);
    const client = fakeClient({});
    expect((await readBootstrapSecret({ client, cache }, "ns", "m-bootstrap"))?.data).toEqual({ value: "Y2xvdWQ=" });
    expect((await readBootstrapSecret({ client, cache }, "ns", "unlabelled"))?.data).toEqual({ value: "eA==" });
    expect(await readBootstrapSecret({ client, cache }, "ns", "missing")).toBeUndefined();
    expect(server.reads).toEqual(["get unlabelled", "get missing"]);
  });
});

describe("credentials from the caches", () => {
  const user = { kind: "TerraformMachine", namespace: "ns", name: "m2", uid: "u2", identity: "aws" };
  const source = (value: string): KubeObject =>
    ({
      metadata: { namespace: "captf-system", name: "aws-creds", resourceVersion: "3" },
      data: { KEY: Buffer.from(value).toString("base64") },
    }) as KubeObject;
  const mirrorOf = (value: string): KubeObject => {
    const plan = planMirror(undefined, (source(value) as { data: Record<string, string> }).data, { ...user, name: "m1", uid: "u1" });
    if (plan.action !== "create") throw new Error(plan.action);
    return { ...plan.secret, metadata: { ...plan.secret.metadata, resourceVersion: "7" } } as KubeObject;
  };

  it(
    "read the source Secret from its own watch and plan the mirror from the cache; a stale mirror's replace loses to a " +
      "conflict and is planned again from a live read",
    async () => {
      const server = fakeServer();
      const identities = fakeInformer();
      identities.put({
        metadata: { name: "aws" },
        spec: { secretRef: { name: "aws-creds", namespace: "captf-system" }, allowedNamespaces: { list: ["ns"] } },
      } as KubeObject);
      const secrets = fakeInformer();
      secrets.put(mirrorOf("v1"));
      const sourceWatch = fakeInformer();
      sourceWatch.put(source("v1"));
      const cache = new ReadCache(server)
        .add(identityResourceType, { informer: identities })
        .add(builtinTypes.secret, { informer: secrets, scoped: true })
        .watchByName(builtinTypes.secret, () => sourceWatch);
      const writes: string[] = [];
      const client = fakeClient({
        "patch secrets": async () => (writes.push("patch"), {}),
        "replace secrets": async ({ body }) => {
          const resourceVersion = (body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
          writes.push(`replace at ${resourceVersion}`);
          if (resourceVersion !== "8") throw apiError(409, "the object has been modified", "Conflict");
          return {};
        },
        // The server's mirror, newer than the cache's.
        "get secrets": async () => (
          writes.push("live read"), { ...mirrorOf("v1"), metadata: { ...mirrorOf("v1").metadata, resourceVersion: "8" } }
        ),
      });
      const added = await ensureCredentials({ client, cache }, user);
      expect(added.credentialsMirrored).toMatchObject({ status: "True", reason: "Mirrored" });
      expect(writes).toEqual(["patch"]);
      // The source changed; the cached mirror is older than the server's: the replace carries its resourceVersion and loses.
      sourceWatch.put(source("v2"));
      const raced = await ensureCredentials({ client, cache }, user);
      expect(raced.credentialsMirrored).toMatchObject({ status: "True", reason: "Mirrored" });
      expect(raced.lostRace).toBeUndefined();
      expect(writes).toEqual(["patch", "replace at 7", "live read", "replace at 8"]);
      expect(server.reads).toEqual([]);
    },
  );
});

describe("a Job as cached", () => {
  it(
    "keeps what the pass reads (metadata, status, each container's name, image and arguments) and drops the rest of its Pod " + "template",
    () => {
      const built = buildJob(
        {
          owner: { role: "machine", name: "m", namespace: "ns", uid: "u", clusterName: "c" },
          op: "apply",
          attempt: 1,
          image: "registry.invalid/m:v1",
          inputsHash: "h2:abc",
          policy: {},
          runnerEvents: true,
          credentialsSecret: "captf-creds-id",
        },
        defaultJobEnvironment,
      );
      const job = {
        ...built,
        metadata: { ...built.metadata, resourceVersion: "3", managedFields: [{ manager: "x" }] },
        status: { active: 1 },
      } as never as V1Job & KubeObject;
      const cached = cachedJob(job);
      expect(cached.metadata).toEqual({ ...built.metadata, resourceVersion: "3" });
      expect(cached.status).toEqual({ active: 1 });
      expect(cached.spec?.activeDeadlineSeconds).toBe(built.spec?.activeDeadlineSeconds);
      expect(cached.spec?.template.spec?.containers).toEqual(
        built.spec!.template.spec!.containers.map(({ name, image, args }) => ({ name, image, ...(args ? { args } : {}) })),
      );
      expect(cached.spec?.template.spec?.initContainers).toEqual(
        built.spec!.template.spec!.initContainers!.map(({ name, image }) => ({ name, image })),
      );
      expect(JSON.stringify(cached)).not.toContain("captf-creds-id");
      for (const dropped of ["volumes", "securityContext"]) expect(cached.spec?.template.spec).not.toHaveProperty(dropped);
      expect(JSON.stringify(cached.spec?.template).length).toBeLessThan(JSON.stringify(job.spec?.template).length / 2);
    },
  );
});
