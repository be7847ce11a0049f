import type { V1Secret } from "@kubernetes/client-node";
import { kindOfRole, type Role } from "@captf/contract";
import { annotations, groupVersion, labels } from "@captf/contract/api";
import { boundedObjectName, nameLabelValue } from "@captf/contract/object-names";
import type { JsonValue } from "@captf/contract";
import { exportsHash, generatedRootBytes, maxGeneratedRootBytes, type GeneratedRoot } from "@captf/render";
import { kindShort } from "../jobs/build-job.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { isConflict, undefinedIfNotFound } from "../runtime/api-errors.js";
import { parsePartialExports, parsePendingExports, type PartialExports, type PendingExports } from "./held-exports.js";
import { passClient } from "../runtime/pass-client.js";

/**
 * The durable inputs Secret `captf-inputs-<c|m|mp>-<name>`: the rendered root of the newest apply
 * that started, kept for the operations that must run on what was applied (destroy, refresh,
 * drift) and for what later renders latch (`control_plane_initialized`). Written when an apply Job
 * starts; owned by the object, so it goes with it.
 */

export interface DurableInputs {
  root: GeneratedRoot;
  inputsHash?: string;
  /** `spec.source.image` the apply ran with. */
  image?: string;
  /** The image digest pinned after a successful apply (`repo@sha256:…`). */
  imageDigest?: string;
  identity?: string;
  /** A successful apply happened (or state with an inputs hash was read). */
  applied: boolean;
  /** The parsed `terraform.tfvars.json`, for latched inputs. */
  variables: Record<string, unknown>;
  /** Pool only: the hash of the cluster exports its last successful apply rendered. */
  appliedClusterOutputsHash?: string;
  /** Pool only: those exports (`applied-cluster-outputs.json`), when they fit beside the root and match the hash. */
  appliedClusterOutputs?: JsonValue;
  /** Pool only: a change of the exports held for approval (`captf.io/pending-cluster-outputs`). */
  pendingClusterOutputs?: PendingExports;
  /** Pool only: a change of the exports that may be partly applied (`captf.io/partial-cluster-outputs`). */
  partialClusterOutputs?: PartialExports;
  /** Cluster and pool: the apply Job that vanished while it ran (`captf.io/interrupted-apply`), until an apply after it succeeds. */
  interruptedApply?: string;
  /** The lineage of this object's state, recorded when first read (`captf.io/state-lineage`): another lineage is another state. */
  stateLineage?: string;
  /**
   * Images a destroy, refresh, drift or restore Job could not pull (`captf.io/unpullable-images`), oldest first;
   * cleared by a successful apply.
   */
  unpullableImages: string[];
}

/** The data key of a pool's applied exports record: data, not an annotation, because exports may be sensitive. */
export const appliedClusterOutputsKey = "applied-cluster-outputs.json";
/** Whether a pool's exports record fits in the durable Secret beside the rendered files: they share the rendered root's budget. Pure. */
export function exportsRecordFits(root: GeneratedRoot, record: string): boolean {
  return generatedRootBytes(root) + Buffer.byteLength(record) <= maxGeneratedRootBytes;
}

/** `captf-inputs-<c|m|mp>-<name>`, bounded to 253 characters as the reference bounds it (start kept, `-<16 hex>` appended). */
export function durableInputsSecretName(role: Role, name: string): string {
  return boundedObjectName(`captf-inputs-${kindShort[role]}-`, name);
}

function decodeData(secret: V1Secret, key: string): string {
  const data = secret.data?.[key];
  return data === undefined ? "" : Buffer.from(data, "base64").toString("utf8");
}

/** Reads the durable inputs (from the cache, where a pass's own write is an expectation); undefined when absent. */
export async function readDurableInputs(
  client: KubeApi,
  role: Role,
  namespace: string,
  name: string,
  cache?: ReadCache,
): Promise<DurableInputs | undefined> {
  const secretName = durableInputsSecretName(role, name);
  // captf labels the durable inputs captf.io/managed: the managed-Secret cache holds them.
  const secret = await passClient({ client, cache }).get<V1Secret>(builtinTypes.secret, namespace, secretName, { inScope: true });
  if (!secret) return undefined;
  const root: GeneratedRoot = {
    "main.tf.json": decodeData(secret, "main.tf.json"),
    "terraform.tfvars.json": decodeData(secret, "terraform.tfvars.json"),
  };
  let variables: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(root["terraform.tfvars.json"] || "{}");
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) variables = parsed as Record<string, unknown>;
  } catch {
    // A damaged tfvars file latches nothing; the next apply rewrites it.
  }
  const notes = secret.metadata?.annotations ?? {};
  const pending = parsePendingExports(notes[annotations.pendingClusterOutputs]);
  const partial = parsePartialExports(notes[annotations.partialClusterOutputs]);
  // A record that does not hash to the recorded hash is not the applied exports.
  const record = appliedExportsRecord(decodeData(secret, appliedClusterOutputsKey), notes[annotations.appliedClusterOutputsHash]);
  return {
    root,
    variables,
    applied: notes[annotations.applied] === "true",
    unpullableImages: parseUnpullableImages(notes[annotations.unpullableImages]),
    ...(notes[annotations.inputsHash] ? { inputsHash: notes[annotations.inputsHash] } : {}),
    ...(notes[annotations.image] ? { image: notes[annotations.image] } : {}),
    ...(notes[annotations.imageDigest] ? { imageDigest: notes[annotations.imageDigest] } : {}),
    ...(notes[annotations.identity] ? { identity: notes[annotations.identity] } : {}),
    ...(notes[annotations.appliedClusterOutputsHash] ? { appliedClusterOutputsHash: notes[annotations.appliedClusterOutputsHash] } : {}),
    ...(record !== undefined ? { appliedClusterOutputs: record } : {}),
    ...(pending ? { pendingClusterOutputs: pending } : {}),
    ...(partial ? { partialClusterOutputs: partial } : {}),
    ...(notes[annotations.interruptedApply] ? { interruptedApply: notes[annotations.interruptedApply] } : {}),
    ...(notes[annotations.stateLineage] ? { stateLineage: notes[annotations.stateLineage] } : {}),
  };
}

/** The images a `captf.io/unpullable-images` value lists; none when it does not parse (the pinned image is only tried again). Pure. */
export function parseUnpullableImages(text: string | undefined): string[] {
  try {
    const parsed: unknown = JSON.parse(text ?? "[]");
    return Array.isArray(parsed) ? parsed.filter((entry): entry is string => typeof entry === "string") : [];
  } catch {
    return [];
  }
}

/** A Job picks among three images (pinned digest, recorded reference, spec's): older entries no longer matter. */
const maxUnpullableImages = 3;

/** The unpullable list with `image` added (once; the newest {@link maxUnpullableImages} kept). Pure. */
export function withUnpullableImage(listed: readonly string[], image: string): string[] {
  return (listed.includes(image) ? [...listed] : [...listed, image]).slice(-maxUnpullableImages);
}

/** The exports a record holds, when it parses and hashes to `recordedHash`; else undefined. Pure. */
function appliedExportsRecord(text: string, recordedHash: string | undefined): JsonValue | undefined {
  if (text === "" || recordedHash === undefined) return undefined;
  try {
    const value = JSON.parse(text) as JsonValue;
    return exportsHash(value) === recordedHash ? value : undefined;
  } catch {
    return undefined;
  }
}

export interface DurableInputsOwner {
  role: Role;
  namespace: string;
  name: string;
  uid: string;
}

/**
 * Writes the inputs an apply starts with. The pinned digest survives only while the image is the
 * same, and `applied` is never taken back (only deletion removes the Secret).
 */
export async function writeDurableInputs(
  client: KubeApi,
  owner: DurableInputsOwner,
  inputs: { root: GeneratedRoot; inputsHash: string; image: string; identity?: string },
  previous: DurableInputs | undefined,
): Promise<void> {
  const notes: Record<string, string> = { [annotations.inputsHash]: inputs.inputsHash, [annotations.image]: inputs.image };
  if (inputs.identity) notes[annotations.identity] = inputs.identity;
  if (previous?.imageDigest && previous.image === inputs.image) notes[annotations.imageDigest] = previous.imageDigest;
  if (previous?.applied) notes[annotations.applied] = "true";
  // What the last successful apply rendered stays until another succeeds: a started apply may yet be blocked or fail.
  if (previous?.appliedClusterOutputsHash) notes[annotations.appliedClusterOutputsHash] = previous.appliedClusterOutputsHash;
  if (previous?.pendingClusterOutputs) notes[annotations.pendingClusterOutputs] = JSON.stringify(previous.pendingClusterOutputs);
  if (previous?.partialClusterOutputs) notes[annotations.partialClusterOutputs] = JSON.stringify(previous.partialClusterOutputs);
  // The applied exports record stays while it fits beside the new files; its hash stays either way.
  const recordText = previous?.appliedClusterOutputs !== undefined ? JSON.stringify(previous.appliedClusterOutputs) : undefined;
  const record: Record<string, string> =
    recordText !== undefined && exportsRecordFits(inputs.root, recordText) ? { [appliedClusterOutputsKey]: recordText } : {};
  if (previous?.interruptedApply) notes[annotations.interruptedApply] = previous.interruptedApply;
  if (previous?.stateLineage) notes[annotations.stateLineage] = previous.stateLineage;
  // The images that could not be pulled still cannot while the image is the same (a successful apply clears them).
  if (previous?.unpullableImages.length && previous.image === inputs.image)
    notes[annotations.unpullableImages] = JSON.stringify(previous.unpullableImages);
  const kind = kindOfRole[owner.role];
  const body: V1Secret = {
    metadata: {
      name: durableInputsSecretName(owner.role, owner.name),
      namespace: owner.namespace,
      labels: { [labels.managed]: "true", [labels.ownerKind]: kind, [labels.ownerName]: nameLabelValue(owner.name) },
      annotations: notes,
      ownerReferences: [{ apiVersion: groupVersion, kind, name: owner.name, uid: owner.uid, controller: true }],
    },
    type: "Opaque",
    stringData: { ...inputs.root, ...record },
  };
  if (previous) await client.replace(builtinTypes.secret, owner.namespace, body.metadata!.name!, body);
  else
    await client.create(builtinTypes.secret, owner.namespace, body).catch(async (error) => {
      if (!isConflict(error)) throw error;
      await client.replace(builtinTypes.secret, owner.namespace, body.metadata!.name!, body);
    });
}

/**
 * Sets (null: removes) annotations on an existing durable inputs Secret (applied, the pinned digest), and data keys given as text; absent
 * is fine.
 */
export async function annotateDurableInputs(
  client: KubeApi,
  role: Role,
  namespace: string,
  name: string,
  values: Record<string, string | null>,
  data?: Record<string, string | null>,
): Promise<void> {
  const encoded =
    data &&
    Object.fromEntries(Object.entries(data).map(([key, text]) => [key, text === null ? null : Buffer.from(text).toString("base64")]));
  await undefinedIfNotFound(
    client.patch(
      builtinTypes.secret,
      namespace,
      durableInputsSecretName(role, name),
      { metadata: { annotations: values }, ...(encoded ? { data: encoded } : {}) },
      "merge",
    ),
  );
}

/** The exports hash of a pool's last successful apply; before that was recorded, the exports its durable inputs hold. */
export function appliedExportsHash(durable: DurableInputs): string {
  return durable.appliedClusterOutputsHash ?? exportsHash(durable.variables.captf_cluster_outputs as JsonValue | undefined);
}
