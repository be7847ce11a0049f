import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { conditionReasons } from "@captf/contract/api";
import { describeWithTools } from "@captf/testkit";
import { preparePlane } from "../reconcile/plane.test-support.js";
import type { KubeClient } from "../runtime/kube-client.js";
import { captureLogs } from "../runtime/runtime.test-support.js";
import { kubeEventRecorder } from "../events/event-recorder.js";
import type { ConditionReport } from "./condition-report.js";
import { credentialsHash } from "./credentials-mirror.js";
import { ensureCredentials, type CredentialsOutcome } from "./ensure-credentials.js";
import { identityController } from "./identity-controller.js";
import { ensureRunnerRbac } from "./runner-rbac.js";

const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const groupVersion = `${infra.group}/${infra.version}`;

// ensureCredentials, ensureRunnerRbac and the identity controller against the real API server
// (with kube-controller-manager's garbage collector, so mirrors must be owned by real objects).
// A canary value in the credentials must never show up in a message, an event or a status.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "identities and credentials on the real API server", () => {
  const run = Date.now().toString(36);
  const namespace = `ident-${run}`;
  const sourceNamespace = `ident-src-${run}`;
  const canary = `canary-${randomUUID()}`;
  const canaryBase64 = Buffer.from(canary).toString("base64");
  /** What the code under test takes; the typed APIs set up and check fixtures. */
  let client: KubeClient;
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let rbac: k8s.RbacAuthorizationV1Api;
  let events: k8s.EventsV1Api;
  const logs = captureLogs("debug");
  /** Every condition and event ensureCredentials or ensureRunnerRbac returned, for the canary check. */
  const reported: unknown[] = [];
  const identities: string[] = [];

  async function ensure(user: User): Promise<CredentialsOutcome> {
    const outcome = await ensureCredentials({ client }, user);
    reported.push(outcome);
    for (const condition of [outcome.identityAllowed, outcome.credentialsMirrored]) expectKnownReason(condition);
    return outcome;
  }

  function expectKnownReason(condition: ConditionReport): void {
    const table = conditionReasons[condition.type];
    expect([condition.type, condition.status, table[condition.status]]).toEqual([
      condition.type,
      condition.status,
      expect.arrayContaining([condition.reason]),
    ]);
  }

  interface User {
    kind: string;
    namespace: string;
    name: string;
    uid: string;
    identity: string;
  }

  async function createNamespace(name: string, labels?: Record<string, string>): Promise<void> {
    await core.createNamespace({ body: { metadata: { name, ...(labels ? { labels } : {}) } } });
  }

  async function createUser(
    kind: "TerraformCluster" | "TerraformMachine",
    userNamespace: string,
    name: string,
    identity: string,
  ): Promise<User> {
    const plural = kind === "TerraformCluster" ? "terraformclusters" : "terraformmachines";
    const spec =
      kind === "TerraformCluster"
        ? { source: { image: "registry.invalid/c:v1" }, identityRef: { name: identity } }
        : { source: { image: "registry.invalid/m:v1" }, identityRef: { name: identity } };
    const created = (await custom.createNamespacedCustomObject({
      ...infra,
      namespace: userNamespace,
      plural,
      body: { apiVersion: groupVersion, kind, metadata: { name }, spec },
    })) as { metadata: { uid: string } };
    return { kind, namespace: userNamespace, name, uid: created.metadata.uid, identity };
  }

  async function createIdentity(suffix: string, spec: Record<string, unknown>): Promise<string> {
    const name = `${run}-${suffix}`;
    await custom.createClusterCustomObject({
      ...infra,
      plural: "terraformclusteridentities",
      body: { apiVersion: groupVersion, kind: "TerraformClusterIdentity", metadata: { name }, spec },
    });
    identities.push(name);
    return name;
  }

  function patchIdentity(name: string, spec: Record<string, unknown>): Promise<unknown> {
    return custom.patchClusterCustomObject(
      { ...infra, plural: "terraformclusteridentities", name, body: { spec } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
  }

  async function readIdentity(name: string): Promise<{
    metadata: { uid: string };
    status?: { conditions?: { type: string; status: string; reason: string; message: string }[]; namespaces?: string[] };
  }> {
    return (await custom.getClusterCustomObject({ ...infra, plural: "terraformclusteridentities", name })) as never;
  }

  function readMirror(mirrorNamespace: string, name: string): Promise<k8s.V1Secret | undefined> {
    return core
      .readNamespacedSecret({ namespace: mirrorNamespace, name })
      .catch((error: { code?: number }) => (error.code === 404 ? undefined : Promise.reject(error)));
  }

  const sourceData = { AWS_ACCESS_KEY_ID: "AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY: canary };
  const sourceRef = () => ({ name: "aws-creds", namespace: sourceNamespace });

  beforeAll(async () => {
    const plane = await preparePlane(namespace);
    ({ client, core, custom } = plane);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    events = kc.makeApiClient(k8s.EventsV1Api);
    await createNamespace(sourceNamespace);
    await core.createNamespacedSecret({
      namespace: sourceNamespace,
      body: { metadata: { name: "aws-creds" }, type: "Opaque", stringData: sourceData },
    });
  }, 120_000);

  afterAll(async () => {
    for (const name of identities)
      await custom.deleteClusterCustomObject({ ...infra, plural: "terraformclusteridentities", name }).catch(() => undefined);
  });

  describe("ensureCredentials", () => {
    let identity: string;
    let cluster: User;
    let machine: User;

    beforeAll(async () => {
      identity = await createIdentity("list", {
        secretRef: sourceRef(),
        allowedNamespaces: { list: [namespace] },
        requiredKeys: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
      });
      cluster = await createUser("TerraformCluster", namespace, "c1", identity);
      machine = await createUser("TerraformMachine", namespace, "m1", identity);
    });

    it("mirrors the Secret into the user's namespace: Opaque copy, labels, annotations and one ownerRef per user", async () => {
      const outcome = await ensure(cluster);
      const mirrorName = `captf-creds-${identity}`;
      expect(outcome).toEqual({
        identityAllowed: {
          type: "IdentityAllowed",
          status: "True",
          reason: "IdentityAllowed",
          message: `TerraformClusterIdentity ${identity} allows namespace ${namespace} (by spec.allowedNamespaces.list)`,
        },
        credentialsMirrored: {
          type: "CredentialsMirrored",
          status: "True",
          reason: "Mirrored",
          message: `Secret ${namespace}/${mirrorName} mirrors Secret ${sourceNamespace}/aws-creds of TerraformClusterIdentity ${identity}`,
        },
        credentialsSecret: mirrorName,
        events: [
          {
            reason: "MirrorCreated",
            type: "Normal",
            note:
              `mirrored Secret ${sourceNamespace}/aws-creds of TerraformClusterIdentity ${identity} into Secret ` +
              `${namespace}/${mirrorName}`,
          },
        ],
      });
      const source = await core.readNamespacedSecret({ namespace: sourceNamespace, name: "aws-creds" });
      const mirror = (await readMirror(namespace, mirrorName))!;
      expect(mirror.type).toBe("Opaque");
      expect(mirror.data).toEqual(source.data);
      expect(mirror.metadata?.labels).toEqual({ "captf.io/mirrored": "true", "captf.io/managed": "true" });
      expect(mirror.metadata?.annotations).toEqual({ "captf.io/source-hash": credentialsHash(source.data), "captf.io/identity": identity });
      expect(mirror.metadata?.ownerReferences).toEqual([
        { apiVersion: groupVersion, kind: "TerraformCluster", name: "c1", uid: cluster.uid },
      ]);

      const again = await ensure(cluster);
      expect(again).toMatchObject({ credentialsMirrored: { status: "True", reason: "Mirrored" }, events: [] });
      expect((await readMirror(namespace, mirrorName))!.metadata?.resourceVersion).toBe(mirror.metadata?.resourceVersion);

      await ensure(machine);
      const shared = (await readMirror(namespace, mirrorName))!;
      expect(shared.metadata?.ownerReferences).toEqual([
        { apiVersion: groupVersion, kind: "TerraformCluster", name: "c1", uid: cluster.uid },
        { apiVersion: groupVersion, kind: "TerraformMachine", name: "m1", uid: machine.uid },
      ]);
      expect(shared.metadata?.ownerReferences?.some((ref) => ref.controller || ref.blockOwnerDeletion)).toBe(false);
    });

    it("adds the refs of many users starting at once without a conflict", async () => {
      const identity = await createIdentity("many", { secretRef: sourceRef(), allowedNamespaces: { list: [namespace] } });
      const users = await Promise.all(
        ["p1", "p2", "p3", "p4", "p5", "p6"].map((name) => createUser("TerraformMachine", namespace, name, identity)),
      );
      await ensure(users[0]!);
      const outcomes = await Promise.all(users.slice(1).map((user) => ensure(user)));
      expect(outcomes.map((outcome) => outcome.credentialsMirrored.reason)).toEqual(users.slice(1).map(() => "Mirrored"));
      const refs = (await readMirror(namespace, `captf-creds-${identity}`))!.metadata?.ownerReferences ?? [];
      expect(users.every((user) => refs.filter((ref) => ref.uid === user.uid).length === 1)).toBe(true);
      for (const user of users)
        await custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: user.name });
    });

    it("replaces the ref of an earlier object of the same name", async () => {
      await custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "m1" });
      const reborn = await createUser("TerraformMachine", namespace, "m1", identity);
      await ensure(reborn);
      const refs = (await readMirror(namespace, `captf-creds-${identity}`))!.metadata?.ownerReferences ?? [];
      expect(refs.filter((ref) => ref.name === "m1").map((ref) => ref.uid)).toEqual([reborn.uid]);
      machine = reborn;
    });

    it("rewrites the mirror when the source's data changes (rotation)", async () => {
      const mirrorName = `captf-creds-${identity}`;
      const before = (await readMirror(namespace, mirrorName))!;
      await core.replaceNamespacedSecret({
        namespace: sourceNamespace,
        name: "aws-creds",
        body: {
          metadata: { name: "aws-creds" },
          type: "Opaque",
          stringData: { ...sourceData, AWS_SECRET_ACCESS_KEY: `${canary}-rotated` },
        },
      });
      const outcome = await ensure(cluster);
      expect(outcome.credentialsMirrored).toMatchObject({
        status: "True",
        reason: "Mirrored",
        message: expect.stringContaining("rewritten with its changed data"),
      });
      const after = (await readMirror(namespace, mirrorName))!;
      expect(Buffer.from(after.data!.AWS_SECRET_ACCESS_KEY!, "base64").toString()).toBe(`${canary}-rotated`);
      expect(after.metadata?.annotations?.["captf.io/source-hash"]).not.toBe(before.metadata?.annotations?.["captf.io/source-hash"]);
      expect(after.metadata?.annotations?.["captf.io/source-hash"]).toBe(credentialsHash(after.data));
      expect(after.metadata?.ownerReferences).toHaveLength(2);
    });

    it("leaves alone a Secret of the mirror's name that is not a captf mirror: MirrorFailed", async () => {
      const foreignNamespace = `ident-foreign-${run}`;
      await createNamespace(foreignNamespace);
      await patchIdentity(identity, { allowedNamespaces: { list: [namespace, foreignNamespace] } });
      const mirrorName = `captf-creds-${identity}`;
      const foreign = await core.createNamespacedSecret({
        namespace: foreignNamespace,
        body: { metadata: { name: mirrorName, labels: { "captf.io/managed": "true" } }, stringData: { mine: "keep" } },
      });
      const user = await createUser("TerraformCluster", foreignNamespace, "c2", identity);
      const outcome = await ensure(user);
      expect(outcome.identityAllowed).toMatchObject({ status: "True", reason: "IdentityAllowed" });
      expect(outcome.credentialsMirrored).toMatchObject({
        status: "False",
        reason: "MirrorFailed",
        message: expect.stringContaining(`Secret ${foreignNamespace}/${mirrorName} exists and is not a captf mirror`),
      });
      expect(outcome.credentialsSecret).toBeUndefined();
      const after = (await readMirror(foreignNamespace, mirrorName))!;
      expect(after.metadata?.resourceVersion).toBe(foreign.metadata?.resourceVersion);
      expect(after.data).toEqual({ mine: Buffer.from("keep").toString("base64") });
    });

    it("takes the mirror back when the namespace is no longer allowed: NamespaceNotAllowed, deleted once no user is left", async () => {
      const mirrorName = `captf-creds-${identity}`;
      await patchIdentity(identity, { allowedNamespaces: { list: ["somewhere-else"] } });
      const first = await ensure(cluster);
      expect(first.identityAllowed).toEqual({
        type: "IdentityAllowed",
        status: "False",
        reason: "NamespaceNotAllowed",
        message:
          `TerraformClusterIdentity ${identity} does not allow namespace ${namespace}: spec.allowedNamespaces.list does ` +
          `not name ${namespace}`,
      });
      expect(first.credentialsMirrored).toMatchObject({ status: "Unknown", reason: "MirrorPending" });
      expect(first.credentialsSecret).toBeUndefined();
      expect(first.events).toEqual([]);
      expect((await readMirror(namespace, mirrorName))!.metadata?.ownerReferences?.map((ref) => ref.name)).toEqual(["m1"]);

      const last = await ensure(machine);
      expect(last.events).toEqual([
        { reason: "MirrorRemoved", type: "Normal", note: expect.stringContaining(`removed Secret ${namespace}/${mirrorName}`) },
      ]);
      expect(await readMirror(namespace, mirrorName)).toBeUndefined();
      expect(await ensure(cluster)).toMatchObject({ identityAllowed: { reason: "NamespaceNotAllowed" }, events: [] });
    });

    it("allows by namespace labels when the identity has a selector", async () => {
      const labelled = `ident-sel-${run}`;
      await createNamespace(labelled);
      const selected = await createIdentity("selector", {
        secretRef: sourceRef(),
        allowedNamespaces: { selector: { matchLabels: { [`captf-test/${run}`]: "allowed" } } },
      });
      const user = await createUser("TerraformCluster", labelled, "c3", selected);
      expect((await ensure(user)).identityAllowed).toMatchObject({
        status: "False",
        reason: "NamespaceNotAllowed",
        message: expect.stringContaining(`the labels of namespace ${labelled} do not match`),
      });
      await core.patchNamespace(
        { name: labelled, body: { metadata: { labels: { [`captf-test/${run}`]: "allowed" } } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      const allowed = await ensure(user);
      expect(allowed.identityAllowed).toMatchObject({
        status: "True",
        reason: "IdentityAllowed",
        message: expect.stringContaining("by spec.allowedNamespaces.selector"),
      });
      expect(allowed.credentialsSecret).toBe(`captf-creds-${selected}`);
      expect(await readMirror(labelled, `captf-creds-${selected}`)).toBeDefined();
    });

    it("does not mirror a Secret missing required keys: CredentialsIncomplete names the keys", async () => {
      const incomplete = await createIdentity("incomplete", {
        secretRef: sourceRef(),
        allowedNamespaces: { selector: {} },
        requiredKeys: ["AWS_ACCESS_KEY_ID", "AWS_REGION"],
      });
      const user = await createUser("TerraformCluster", namespace, "c4", incomplete);
      const outcome = await ensure(user);
      expect(outcome.identityAllowed).toEqual({
        type: "IdentityAllowed",
        status: "False",
        reason: "CredentialsIncomplete",
        message: `Secret ${sourceNamespace}/aws-creds of TerraformClusterIdentity ${incomplete} lacks required keys: AWS_REGION`,
      });
      expect(outcome.credentialsMirrored).toMatchObject({ status: "Unknown", reason: "MirrorPending" });
      expect(await readMirror(namespace, `captf-creds-${incomplete}`)).toBeUndefined();
    });

    it("reports an identity or Secret that does not exist", async () => {
      const missingSecret = await createIdentity("nosecret", {
        secretRef: { name: "absent", namespace: sourceNamespace },
        allowedNamespaces: { selector: {} },
      });
      expect((await ensure({ ...cluster, identity: missingSecret })).identityAllowed).toMatchObject({
        status: "False",
        reason: "SecretNotFound",
      });
      expect((await ensure({ ...cluster, identity: `${run}-absent` })).identityAllowed).toMatchObject({
        status: "False",
        reason: "IdentityNotFound",
        message: `TerraformClusterIdentity ${run}-absent does not exist; create it or reference another identity`,
      });
    });
  });

  describe("ensureRunnerRbac", () => {
    it("creates the runner's ServiceAccount and RoleBinding, labelled managed, and is idempotent", async () => {
      const condition = await ensureRunnerRbac({ client }, namespace);
      reported.push(condition);
      expect(condition).toEqual({
        type: "RunnerRBACReady",
        status: "True",
        reason: "RBACReady",
        message: `ServiceAccount captf-runner is bound to ClusterRole captf-runner in namespace ${namespace}`,
      });
      const account = await core.readNamespacedServiceAccount({ namespace, name: "captf-runner" });
      expect(account.metadata?.labels).toEqual({ "captf.io/managed": "true" });
      const binding = await rbac.readNamespacedRoleBinding({ namespace, name: "captf-runner" });
      expect(binding.metadata?.labels).toEqual({ "captf.io/managed": "true" });
      expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "captf-runner" });
      expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "captf-runner", namespace }]);
      expect(await ensureRunnerRbac({ client }, namespace)).toMatchObject({ status: "True", reason: "RBACReady" });
      expect((await rbac.readNamespacedRoleBinding({ namespace, name: "captf-runner" })).metadata?.resourceVersion).toBe(
        binding.metadata?.resourceVersion,
      );
    });

    it("never takes over a RoleBinding of that name captf did not make that binds something else: RBACFailed", async () => {
      const other = `ident-rbac-${run}`;
      await createNamespace(other);
      const foreign = await rbac.createNamespacedRoleBinding({
        namespace: other,
        body: {
          metadata: { name: "captf-runner" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
          subjects: [{ kind: "User", name: "someone", apiGroup: "rbac.authorization.k8s.io" }],
        },
      });
      const condition = await ensureRunnerRbac({ client }, other);
      expect(condition).toMatchObject({
        type: "RunnerRBACReady",
        status: "False",
        reason: "RBACFailed",
        message: expect.stringContaining("binds ClusterRole view rather than ClusterRole captf-runner"),
      });
      expect((await rbac.readNamespacedRoleBinding({ namespace: other, name: "captf-runner" })).metadata?.resourceVersion).toBe(
        foreign.metadata?.resourceVersion,
      );
    });
  });

  describe("the identity controller", () => {
    const context = (name: string) => ({
      namespace: undefined,
      name,
      reconcileId: "test",
      logger: logs.logger,
      signal: new AbortController().signal,
    });
    const controller = () => identityController({ client, events: kubeEventRecorder(client, { instance: "test-manager" }) });

    it("sets Ready=True/SecretFound and status.namespaces from the used mirrors, requeueing in 5 minutes", async () => {
      const identity = await createIdentity("ctrl", {
        secretRef: sourceRef(),
        allowedNamespaces: { list: [namespace] },
        requiredKeys: ["AWS_SECRET_ACCESS_KEY"],
      });
      const user = await createUser("TerraformCluster", namespace, "c5", identity);
      expect((await ensure(user)).credentialsSecret).toBe(`captf-creds-${identity}`);
      const outcome = await controller().reconcile(identity, context(identity));
      expect(outcome).toEqual({ requeueAfterMillis: 300_000 });
      const stored = await readIdentity(identity);
      expect(stored.status?.conditions).toEqual([
        expect.objectContaining({
          type: "Ready",
          status: "True",
          reason: "SecretFound",
          message: `Secret ${sourceNamespace}/aws-creds exists and holds every required key`,
          observedGeneration: 1,
        }),
      ]);
      expect(stored.status?.namespaces).toEqual([namespace]);
      // The identity owns its source Secret (clusterctl move carries it with the identity), once however many passes run.
      await controller().reconcile(identity, context(identity));
      const source = await core.readNamespacedSecret({ namespace: sourceNamespace, name: "aws-creds" });
      expect(source.metadata?.ownerReferences?.filter((reference) => reference.name === identity)).toEqual([
        {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformClusterIdentity",
          name: identity,
          uid: stored.metadata.uid,
        },
      ]);

      await patchIdentity(identity, { allowedNamespaces: { list: ["somewhere-else"] } });
      await ensure(user);
      await controller().reconcile(identity, context(identity));
      expect((await readIdentity(identity)).status?.namespaces).toBeUndefined();
    });

    it(
      "sets Ready=False/CredentialsIncomplete naming the keys and SecretNotFound, requeueing in 30 seconds, with a Warning " + "event",
      async () => {
        const incomplete = await createIdentity("ctrl-incomplete", {
          secretRef: sourceRef(),
          requiredKeys: ["AWS_REGION", "AWS_SECRET_ACCESS_KEY"],
        });
        expect(await controller().reconcile(incomplete, context(incomplete))).toEqual({ requeueAfterMillis: 30_000 });
        expect((await readIdentity(incomplete)).status?.conditions?.[0]).toMatchObject({
          type: "Ready",
          status: "False",
          reason: "CredentialsIncomplete",
          message: `Secret ${sourceNamespace}/aws-creds lacks required keys: AWS_REGION`,
        });

        const missing = await createIdentity("ctrl-missing", { secretRef: { name: "absent", namespace: sourceNamespace } });
        expect(await controller().reconcile(missing, context(missing))).toEqual({ requeueAfterMillis: 30_000 });
        expect((await readIdentity(missing)).status?.conditions?.[0]).toMatchObject({
          type: "Ready",
          status: "False",
          reason: "SecretNotFound",
        });

        const recorded = (await events.listNamespacedEvent({ namespace: "default" })).items.filter(
          (event) => event.regarding?.name === incomplete || event.regarding?.name === missing,
        );
        // The identity is cluster-scoped: its events are in the default namespace, regarding no namespace.
        expect(
          recorded
            .map((event) => [
              event.regarding?.name,
              event.regarding?.namespace,
              event.reason,
              event.type,
              event.action,
              event.reportingController,
              event.reportingInstance,
            ])
            .sort(),
        ).toEqual(
          [
            [incomplete, undefined, "IdentitySecretNotFound", "Warning", "CheckSecret", "captf-manager", "test-manager"],
            [missing, undefined, "IdentitySecretNotFound", "Warning", "CheckSecret", "captf-manager", "test-manager"],
          ].sort(),
        );
        // Still missing: no second event.
        await controller().reconcile(missing, context(missing));
        expect(
          (await events.listNamespacedEvent({ namespace: "default" })).items.filter((event) => event.regarding?.name === missing),
        ).toHaveLength(1);
      },
    );

    it("does nothing for an identity that is gone", async () => {
      expect(await controller().reconcile(`${run}-gone`, context(`${run}-gone`))).toEqual({});
    });
  });

  it("never shows the canary value in a returned message, an event, a log line or an identity's status", async () => {
    const statuses = await Promise.all(identities.map(async (name) => (await readIdentity(name)).status));
    const recorded = (await events.listNamespacedEvent({ namespace: "default" })).items.map((event) => event.note);
    const everything = JSON.stringify({ reported, statuses, recorded, logs: logs.lines });
    expect(reported.length).toBeGreaterThan(10);
    expect(everything).not.toContain(canary);
    expect(everything).not.toContain(canaryBase64);
    expect(everything).not.toContain(Buffer.from(`${canary}-rotated`).toString("base64"));
  });
});
