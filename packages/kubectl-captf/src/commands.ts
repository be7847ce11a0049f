/**
 * The commands against the API server: each reads what it shows, decides with a pure function
 * (describe.ts, decisions.ts) and writes at most one annotation, with the resourceVersion it read
 * as precondition, and one event naming who asked.
 */
import { randomBytes } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { nameLabelValue } from "@captf/contract/object-names";
import {
  annotations,
  eventReporters,
  groupVersion,
  kinds,
  labels,
  pluginEventReasons,
  type ConditionType,
  type PluginEventReason,
} from "@captf/contract/api";
import { buildClusterTree, formatClusterTree, type ClusterTree, type JobSummary } from "./describe.js";
import { approvalDecision, formatPlan, lastJob, lastPod, pendingPlan, restoreDecision, type Decision } from "./decisions.js";
import { isObjectNotFound, isStatus, type Connection } from "./kube.js";
import { showPlanDiff } from "./plan-diff.js";
import { describeObject, Refusal, resourceOf, type CaptfObject, type ObjectReference } from "./objects.js";

export type OutputFormat = "text" | "json";

export interface Output {
  write(text: string): unknown;
}

const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
/** Attempts of a guarded write whose resourceVersion went stale (a status patch in between). */
const maxWriteAttempts = 5;

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function unwrap<T>(decision: Decision<T>): T {
  if ("refused" in decision) throw new Refusal(decision.refused);
  return decision.ok;
}

async function readObject(connection: Connection, reference: ObjectReference): Promise<CaptfObject> {
  try {
    const found = (await connection.objects.getNamespacedCustomObject({
      ...resourceOf(reference.kind),
      namespace: connection.namespace,
      name: reference.name,
    })) as Omit<CaptfObject, "kind">;
    return { ...found, kind: reference.kind };
  } catch (error) {
    if (isObjectNotFound(error)) throw new Refusal(`${reference.kind} ${connection.namespace}/${reference.name} not found`);
    throw error;
  }
}

async function listObjects(connection: Connection, kind: string, labelSelector?: string): Promise<CaptfObject[]> {
  const list = (await connection.objects.listNamespacedCustomObject({
    ...resourceOf(kind),
    namespace: connection.namespace,
    ...(labelSelector ? { labelSelector } : {}),
  })) as { items: Omit<CaptfObject, "kind">[] };
  return list.items.map((item) => ({ ...item, kind }));
}

function jobSummary(job: k8s.V1Job): JobSummary {
  const jobLabels = job.metadata?.labels ?? {};
  const finished = job.status?.conditions?.find(
    (condition) => (condition.type === "Complete" || condition.type === "Failed") && condition.status === "True",
  );
  return {
    name: job.metadata?.name ?? "",
    ownerKind: jobLabels[labels.ownerKind] ?? "",
    ownerName: jobLabels[labels.ownerName] ?? "",
    operation: jobLabels[labels.op] ?? "",
    attempt: Number(jobLabels[labels.attempt] ?? 0),
    ...(job.metadata?.creationTimestamp ? { createdAt: new Date(job.metadata.creationTimestamp).toISOString() } : {}),
    running: !finished,
    ...(finished ? { outcome: finished.type as "Complete" | "Failed" } : {}),
  };
}

async function listJobs(connection: Connection, labelSelector: string): Promise<JobSummary[]> {
  const list = await connection.batch.listNamespacedJob({ namespace: connection.namespace, labelSelector });
  return list.items.map(jobSummary);
}

/** The requester as the API server authenticates it (SelfSubjectReview); undefined when it cannot say. */
async function whoAmI(connection: Connection): Promise<string | undefined> {
  try {
    const review = await connection.authentication.createSelfSubjectReview({
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    return review.status?.userInfo?.username;
  } catch {
    return undefined;
  }
}

/** An events.k8s.io/v1 event on the object; best effort, like kubectl's own. */
async function recordEvent(
  connection: Connection,
  object: CaptfObject,
  reason: PluginEventReason,
  action: string,
  note: string,
): Promise<boolean> {
  const namespace = object.metadata.namespace ?? connection.namespace;
  try {
    await connection.events.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${object.metadata.name}.${Date.now().toString(16)}${randomBytes(3).toString("hex")}`, namespace },
        eventTime: new k8s.V1MicroTime(Date.now()),
        reportingController: eventReporters.plugin,
        reportingInstance: eventReporters.plugin,
        action,
        reason,
        type: pluginEventReasons[reason],
        note,
        regarding: { apiVersion: groupVersion, kind: object.kind, namespace, name: object.metadata.name, uid: object.metadata.uid ?? "" },
      },
    });
    return true;
  } catch {
    return false;
  }
}

/** Sets one annotation with the read resourceVersion as precondition; on a conflict, reads and decides again. */
async function guardedAnnotate<T>(
  connection: Connection,
  reference: ObjectReference,
  first: CaptfObject,
  decide: (object: CaptfObject) => T,
  annotationOf: (decision: T) => [string, string] | undefined,
): Promise<{ object: CaptfObject; decision: T; written: boolean }> {
  let object = first;
  for (let attempt = 1; ; attempt++) {
    const decision = decide(object);
    const annotation = annotationOf(decision);
    if (!annotation) return { object, decision, written: false };
    try {
      const patched = (await connection.objects.patchNamespacedCustomObject(
        {
          ...resourceOf(reference.kind),
          namespace: connection.namespace,
          name: reference.name,
          body: { metadata: { resourceVersion: object.metadata.resourceVersion, annotations: { [annotation[0]]: annotation[1] } } },
        },
        mergePatch,
      )) as Omit<CaptfObject, "kind">;
      return { object: { ...patched, kind: reference.kind }, decision, written: true };
    } catch (error) {
      if (!isStatus(error, 409) || attempt >= maxWriteAttempts) throw error;
      object = await readObject(connection, reference);
    }
  }
}

// ---- describe cluster ----

/** The TerraformCluster of a Cluster API cluster: the one labelled with its name, else the one of that name. */
async function terraformClusterOf(connection: Connection, cluster: string): Promise<CaptfObject> {
  const labelled = await listObjects(connection, kinds.cluster, `${labels.clusterName}=${nameLabelValue(cluster)}`);
  if (labelled.length > 0) return labelled.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))[0]!;
  return readObject(connection, { kind: kinds.cluster, name: cluster });
}

export async function describeClusterTree(connection: Connection, cluster: string): Promise<ClusterTree> {
  const terraformCluster = await terraformClusterOf(connection, cluster);
  const selector = `${labels.clusterName}=${nameLabelValue(cluster)}`;
  const [machines, pools, jobs] = await Promise.all([
    listObjects(connection, kinds.machine, selector),
    listObjects(connection, kinds.machinePool, selector),
    listJobs(connection, labels.ownerKind),
  ]);
  const identityName = terraformCluster.spec?.identityRef?.name;
  let identity: CaptfObject | undefined;
  let identityUnreadable: string | undefined;
  if (identityName) {
    // Identities are cluster-scoped: a user of one namespace may not read them, which leaves the rest of the tree worth showing.
    identity = await connection.objects
      .getClusterCustomObject({ ...resourceOf(kinds.clusterIdentity), name: identityName })
      .then((found) => ({ ...(found as Omit<CaptfObject, "kind">), kind: kinds.clusterIdentity }))
      .catch((error: unknown) => {
        if (isObjectNotFound(error)) identityUnreadable = "not found";
        else if (isStatus(error, 403)) identityUnreadable = "not readable: forbidden";
        else return Promise.reject(error);
        return undefined;
      });
  }
  return buildClusterTree({
    cluster,
    namespace: connection.namespace,
    terraformCluster,
    ...(identityName ? { identityName } : {}),
    ...(identity ? { identity } : {}),
    ...(identityUnreadable ? { identityUnreadable } : {}),
    machines,
    pools,
    jobs,
  });
}

export async function describeCluster(
  connection: Connection,
  cluster: string,
  format: OutputFormat,
  out: Output,
  now = Date.now(),
): Promise<void> {
  const tree = await describeClusterTree(connection, cluster);
  out.write(format === "json" ? json(tree) : formatClusterTree(tree, now));
}

// ---- plan show / approve ----

export async function showPlan(
  connection: Connection,
  reference: ObjectReference,
  referenceText: string,
  format: OutputFormat,
  out: Output,
  diff = false,
): Promise<void> {
  const object = await readObject(connection, reference);
  if (diff) return showPlanDiff(connection, object, referenceText, format, out);
  const plan = unwrap(pendingPlan(object));
  if (format === "json") {
    const approvals = object.metadata.annotations ?? {};
    out.write(
      json({
        object: { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name },
        plan,
        approvedPlan: approvals[annotations.approvePlan] ?? null,
        approvedBy: approvals[annotations.planApprovedBy] ?? null,
      }),
    );
  } else out.write(formatPlan(object, plan, referenceText));
}

export async function approvePlan(
  connection: Connection,
  reference: ObjectReference,
  expectedHash: string | undefined,
  format: OutputFormat,
  out: Output,
): Promise<void> {
  const first = await readObject(connection, reference);
  // After a conflict the plan must still be the one first read: approving "whatever is pending now" would approve unseen changes.
  let shown = expectedHash;
  const { object, decision, written } = await guardedAnnotate(
    connection,
    reference,
    first,
    (current) => {
      const approval = unwrap(approvalDecision(current, shown));
      shown = approval.planHash;
      return approval;
    },
    (approval) => (approval.alreadyApproved ? undefined : [annotations.approvePlan, approval.planHash]),
  );
  const approver = object.metadata.annotations?.[annotations.planApprovedBy] ?? (await whoAmI(connection));
  const recorded = written
    ? await recordEvent(
        connection,
        object,
        "PlanApprovalRequested",
        "Approve",
        `plan ${decision.planHash} approved by ${approver ?? "an unknown user"} with kubectl captf`,
      )
    : false;
  if (format === "json") {
    out.write(
      json({
        object: { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name },
        planHash: decision.planHash,
        written,
        approvedBy: object.metadata.annotations?.[annotations.planApprovedBy] ?? null,
        event: recorded,
      }),
    );
    return;
  }
  const who = object.metadata.annotations?.[annotations.planApprovedBy];
  out.write(
    written
      ? `approved plan ${decision.planHash} of ${describeObject(object)}${
          who
            ? ` (recorded approver: ${who})`
            : ` (no approver ` + `recorded: ${annotations.planApprovedBy} is set by captf's mutating webhook)`
        }\n`
      : `plan ${decision.planHash} of ${describeObject(object)} is approved already${who ? ` (by ${who})` : ""}\n`,
  );
}

// ---- restore ----

/** The condition that reports the restore Job's outcome: what a requester watches. */
const restoreCondition: ConditionType = "RestoreJobSucceeded";

/**
 * `restore -o json`: the object, the serial, whether this run wrote the request (false: it was in place), whether the event was
 * recorded, and the condition to watch.
 */
export interface RestoreRequest {
  object: { kind: string; namespace: string; name: string };
  serial: number;
  written: boolean;
  event: boolean;
  watch: ConditionType;
}

export async function requestRestore(
  connection: Connection,
  reference: ObjectReference,
  serial: number,
  format: OutputFormat,
  out: Output,
): Promise<void> {
  const first = await readObject(connection, reference);
  const { object, written } = await guardedAnnotate(
    connection,
    reference,
    first,
    (current) => unwrap(restoreDecision(current, serial)),
    (restore) => (restore.alreadyRequested ? undefined : [annotations.restoreState, String(restore.serial)]),
  );
  const requester = written ? await whoAmI(connection) : undefined;
  const recorded = written
    ? await recordEvent(
        connection,
        object,
        "StateRestoreRequested",
        "Restore",
        `restore of state serial ${serial} requested by ${requester ?? "an unknown user"} with kubectl captf`,
      )
    : false;
  if (format === "json") {
    const request: RestoreRequest = {
      object: { kind: object.kind, namespace: object.metadata.namespace ?? connection.namespace, name: object.metadata.name },
      serial,
      written,
      event: recorded,
      watch: restoreCondition,
    };
    out.write(json(request));
  } else
    out.write(
      written
        ? `restore of serial ${serial} requested on ${describeObject(object)}: watch ${restoreCondition}\n`
        : `restore of serial ${serial} is already requested on ${describeObject(object)}\n`,
    );
}

// ---- logs ----

export async function showLogs(connection: Connection, reference: ObjectReference, format: OutputFormat, out: Output): Promise<void> {
  await readObject(connection, reference);
  const jobs = await listJobs(connection, `${labels.ownerKind}=${reference.kind},${labels.ownerName}=${nameLabelValue(reference.name)}`);
  const job = lastJob(jobs);
  if (!job)
    throw new Refusal(
      `${reference.kind} ${connection.namespace}/${reference.name} has no Job (captf deletes finished Jobs after its retention; ` +
        `see status.lastRun)`,
    );
  const pods = await connection.core.listNamespacedPod({
    namespace: connection.namespace,
    labelSelector: `batch.kubernetes.io/job-name=${job.name}`,
  });
  const pod = lastPod(
    pods.items.map((item) => ({
      name: item.metadata?.name ?? "",
      ...(item.metadata?.creationTimestamp ? { createdAt: new Date(item.metadata.creationTimestamp).toISOString() } : {}),
      ...(item.status?.phase ? { phase: item.status.phase } : {}),
    })),
  );
  if (!pod) throw new Refusal(`Job ${connection.namespace}/${job.name} has no pod left to read a log from`);
  // The module container is the pod's only container (the runner copy is an init container), so the API picks it.
  const log = await connection.core.readNamespacedPodLog({ namespace: connection.namespace, name: pod.name });
  if (format === "json") out.write(json({ job: job.name, operation: job.operation, attempt: job.attempt, pod: pod.name, log }));
  else out.write(log.endsWith("\n") || log === "" ? log : `${log}\n`);
}
