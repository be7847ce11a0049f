/**
 * The mutating webhook that records who approved a plan: on a TerraformCluster write that sets or
 * changes `captf.io/approve-plan`, it sets `captf.io/plan-approved-by` to the admission request's
 * user. Nobody else can write that annotation: a write that changes it without changing the
 * approval gets the recorded value back, and removing the approval removes it. Pure: the
 * admission server turns the patch into its answer.
 */
import { annotations } from "@captf/contract/api";

type Annotated = { metadata?: { annotations?: Record<string, string> | null } } | undefined;

export type JsonPatchOperation = { op: "add" | "replace"; path: string; value: unknown } | { op: "remove"; path: string };

/** What `captf.io/plan-approved-by` must hold after this write: the requester for a new approval, else what was recorded. */
export function recordedApprover(oldObject: Annotated, newObject: Annotated, username: string): string | undefined {
  const approval = newObject?.metadata?.annotations?.[annotations.approvePlan];
  if (!approval) return undefined;
  if (approval !== oldObject?.metadata?.annotations?.[annotations.approvePlan]) return username;
  return oldObject?.metadata?.annotations?.[annotations.planApprovedBy];
}

/** RFC 6901: `~` and `/` of a key escaped. */
function pointerToken(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The JSON Patch that makes the new object's approver annotation the recorded one; empty when it already is. */
export function approverPatch(oldObject: Annotated, newObject: Annotated, username: string): JsonPatchOperation[] {
  const wanted = recordedApprover(oldObject, newObject, username);
  const current = newObject?.metadata?.annotations ?? undefined;
  const present = current?.[annotations.planApprovedBy];
  if (present === wanted) return [];
  const path = `/metadata/annotations/${pointerToken(annotations.planApprovedBy)}`;
  if (wanted === undefined) return [{ op: "remove", path }];
  if (!current) return [{ op: "add", path: "/metadata/annotations", value: { [annotations.planApprovedBy]: wanted } }];
  return [{ op: present === undefined ? "add" : "replace", path, value: wanted }];
}
