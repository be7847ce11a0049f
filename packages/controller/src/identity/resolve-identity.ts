/**
 * Which identity an object's Jobs use. A TerraformCluster uses only its own spec.identityRef; a
 * TerraformMachine or TerraformMachinePool uses its own, else its TerraformCluster's
 * spec.defaults.identityRef, else that cluster's spec.identityRef.
 */
import { kindOfRole, type Role } from "@captf/contract";
import { kinds } from "@captf/contract/api";
import type { IdentityReference } from "../api/workspace.js";
import { conditionReport, type ConditionReport } from "./condition-report.js";

export type IdentityReferenceKind = NonNullable<IdentityReference["kind"]>;

export interface ObjectIdentitySpec {
  identityRef?: IdentityReference | undefined;
}

export interface ClusterIdentitySpec {
  identityRef?: IdentityReference | undefined;
  defaults?: { identityRef?: IdentityReference | undefined } | undefined;
}

/** Where the reference was found. */
export type IdentitySource = "spec.identityRef" | "cluster spec.defaults.identityRef" | "cluster spec.identityRef";

export type IdentityResolution =
  | { resolved: true; name: string; kind: IdentityReferenceKind; source: IdentitySource }
  | { resolved: false; reason: "IdentityNotFound"; condition: ConditionReport };

/** `clusterSpec` is the owning TerraformCluster's spec, undefined when it is not known (or for a cluster). */
export function resolveIdentityName(
  role: Role,
  objectSpec: ObjectIdentitySpec,
  clusterSpec: ClusterIdentitySpec | undefined,
): IdentityResolution {
  const candidates: [IdentitySource, IdentityReference | undefined][] =
    role === "cluster"
      ? [["spec.identityRef", objectSpec.identityRef]]
      : [
          ["spec.identityRef", objectSpec.identityRef],
          ["cluster spec.defaults.identityRef", clusterSpec?.defaults?.identityRef],
          ["cluster spec.identityRef", clusterSpec?.identityRef],
        ];
  for (const [source, ref] of candidates) {
    if (ref?.name) return { resolved: true, name: ref.name, kind: ref.kind ?? kinds.clusterIdentity, source };
  }
  const kind = kindOfRole[role];
  const message =
    role === "cluster"
      ? `${kind} sets no spec.identityRef; name a TerraformClusterIdentity`
      : clusterSpec === undefined
        ? `${kind} sets no spec.identityRef and its TerraformCluster is not known; set spec.identityRef or wait for the cluster`
        : `${kind} sets no spec.identityRef and its TerraformCluster sets neither spec.defaults.identityRef nor ` +
          `spec.identityRef; set one of them`;
  return {
    resolved: false,
    reason: "IdentityNotFound",
    condition: conditionReport("IdentityAllowed", "False", "IdentityNotFound", message),
  };
}
