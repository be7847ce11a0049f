/** Validating webhook of TerraformCluster (CREATE, UPDATE; deletes are always admitted). */
import type { ApiEndpoint } from "../api/kubernetes-types.js";
import type { TerraformCluster, TerraformClusterSpec } from "../api/terraformcluster.js";
import { jobPolicyProblems } from "./job-policy.js";
import { isDeleting, verdict, type AdmissionContext, type Verdict } from "./verdict.js";
import { sameJsonValue } from "@captf/contract";
import { workspaceProblems } from "./workspace.js";

/** Rules on a TerraformCluster spec at `path` that hold for the kind and its template alike. */
export function clusterSpecProblems(
  path: string,
  oldSpec: TerraformClusterSpec | undefined,
  newSpec: TerraformClusterSpec,
  deleting: boolean,
): string[] {
  const problems = workspaceProblems({ role: "cluster", path, oldSpec, newSpec, deleting });
  if (!deleting && (oldSpec === undefined || !sameJsonValue(oldSpec.defaults?.jobs, newSpec.defaults?.jobs))) {
    problems.push(...jobPolicyProblems(`${path}.defaults.jobs`, newSpec.defaults?.jobs));
  }
  const endpoint = newSpec.controlPlaneEndpoint;
  if (
    endpoint &&
    (endpoint.host === undefined) !== (endpoint.port === undefined) &&
    !sameJsonValue(oldSpec?.controlPlaneEndpoint, endpoint)
  ) {
    problems.push(`${path}.controlPlaneEndpoint: set host and port together, or neither`);
  }
  return problems;
}

/**
 * Once it has a host, every Machine and kubeconfig points at the endpoint. A port missing from an
 * endpoint stored earlier may still be completed. (On a template the whole spec is immutable instead.)
 */
function endpointChangeProblems(oldEndpoint: ApiEndpoint | undefined, newEndpoint: ApiEndpoint | undefined): string[] {
  if (oldEndpoint?.host === undefined) return [];
  const hostChanged = newEndpoint?.host !== oldEndpoint.host;
  const portChanged = oldEndpoint.port !== undefined && newEndpoint?.port !== oldEndpoint.port;
  if (!hostChanged && !portChanged) return [];
  const stored = `${oldEndpoint.host}${oldEndpoint.port === undefined ? "" : `:${oldEndpoint.port}`}`;
  return [
    `spec.controlPlaneEndpoint is immutable once it has a host (${stored}): every Machine and kubeconfig points at it; create a ` +
      `new cluster to use another endpoint`,
  ];
}

export function validateTerraformCluster(
  oldObject: TerraformCluster | undefined,
  newObject: TerraformCluster,
  _context: AdmissionContext,
): Verdict {
  const problems = clusterSpecProblems("spec", oldObject?.spec, newObject.spec, isDeleting(newObject));
  problems.push(...endpointChangeProblems(oldObject?.spec.controlPlaneEndpoint, newObject.spec.controlPlaneEndpoint));
  if (!newObject.spec.identityRef?.name) {
    problems.unshift(
      "spec.identityRef.name is required: a TerraformCluster uses only its own identity (spec.defaults.identityRef applies to " +
        "its machines and pools); name a TerraformClusterIdentity",
    );
  }
  return verdict(problems);
}
