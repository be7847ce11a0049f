/**
 * Rules on the fields the three Job-running kinds (and their templates) share: the source image,
 * the jobs policy and the user variables. Each rule runs on create and, on update, only when its
 * field changed, so an object stored before a rule existed never gets stuck; policies are not
 * checked at all on an object being deleted, so its finalizer stays removable.
 */
import { sameJsonValue, type Role } from "@captf/contract";
import { maxInlineVariables, maxVariablesSources, reservedVariableReason } from "@captf/render";
import type { TerraformMachinePoolSpec } from "../api/terraformmachinepool.js";
import { imageReferenceProblem } from "@captf/contract/oci";
import { jobPolicyProblems } from "./job-policy.js";
import { isDnsSubdomain } from "./kubernetes-names.js";
import { secretKeyPattern } from "../api/workspace.js";

const secretKey = new RegExp(secretKeyPattern);

/** The shared part of a TerraformCluster, TerraformMachine or TerraformMachinePool spec. */
export type WorkspaceSpec = Pick<
  TerraformMachinePoolSpec,
  "source" | "identityRef" | "jobs" | "variables" | "variablesFrom" | "stateEncryption"
>;

export interface WorkspaceCheck {
  role: Role;
  /** Path of the spec in the object, e.g. `spec` or `spec.template.spec`. */
  path: string;
  oldSpec: WorkspaceSpec | undefined;
  newSpec: WorkspaceSpec;
  deleting: boolean;
}

/** A field is checked on create, and on update when it changed. */
function checked<K extends keyof WorkspaceSpec>(check: WorkspaceCheck, field: K): boolean {
  return check.oldSpec === undefined || !sameJsonValue(check.oldSpec[field], check.newSpec[field]);
}

export function workspaceProblems(check: WorkspaceCheck): string[] {
  const { path, newSpec } = check;
  const problems: string[] = [];
  if (checked(check, "source")) {
    const image = newSpec.source?.image;
    if (!image) {
      problems.push(`${path}.source.image is required: name the module image (registry/repository:tag or @sha256:<digest>)`);
    } else {
      const problem = imageReferenceProblem(image);
      if (problem)
        problems.push(
          `${path}.source.image: ${JSON.stringify(image)} is not a valid image reference: ${problem}; use ` +
            `registry/repository:tag or registry/repository@sha256:<digest>`,
        );
    }
  }
  if (!check.deleting && checked(check, "jobs")) problems.push(...jobPolicyProblems(`${path}.jobs`, newSpec.jobs));
  if (checked(check, "variables")) problems.push(...variablesProblems(check.role, `${path}.variables`, newSpec.variables));
  if (checked(check, "variablesFrom")) problems.push(...variablesFromProblems(`${path}.variablesFrom`, newSpec.variablesFrom));
  if (checked(check, "stateEncryption")) problems.push(...stateEncryptionProblems(`${path}.stateEncryption`, newSpec.stateEncryption));
  return problems;
}

/** The encryption Secret reference: a Secret name and a data key; never read here (the manager reports a missing one). */
export function stateEncryptionProblems(path: string, encryption: WorkspaceSpec["stateEncryption"]): string[] {
  if (!encryption) return [];
  const ref = encryption.secretRef as { name?: unknown; key?: unknown } | undefined;
  if (!ref) return [`${path}.secretRef is required: name the Secret holding TF_ENCRYPTION`];
  const problems: string[] = [];
  if (typeof ref.name !== "string" || !isDnsSubdomain(ref.name))
    problems.push(`${path}.secretRef.name: ${JSON.stringify(ref.name)} is not a valid Secret name (a lowercase DNS subdomain)`);
  if (ref.key !== undefined && (typeof ref.key !== "string" || !secretKey.test(ref.key) || ref.key.length > 253))
    problems.push(`${path}.secretRef.key: ${JSON.stringify(ref.key)} is not a valid Secret key (letters, digits, '-', '_' and '.')`);
  return problems;
}

/** Inline variables: a JSON object of at most 256 keys, none reserved for the role. Messages name keys, never values. */
export function variablesProblems(role: Role, path: string, variables: unknown): string[] {
  if (variables === undefined) return [];
  if (typeof variables !== "object" || variables === null || Array.isArray(variables))
    return [`${path} must be a JSON object of variable names to values`];
  const names = Object.keys(variables);
  const problems: string[] = [];
  if (names.length > maxInlineVariables)
    problems.push(
      `${path} sets ${names.length} variables; at most ${maxInlineVariables} are allowed: move some into a variablesFrom source`,
    );
  for (const name of names) {
    const reason = reservedVariableReason(role, name);
    if (reason) problems.push(`${path}: ${reason}; rename or remove it`);
  }
  return problems;
}

export function variablesFromProblems(path: string, sources: WorkspaceSpec["variablesFrom"]): string[] {
  if (!sources) return [];
  const problems: string[] = [];
  if (sources.length > maxVariablesSources)
    problems.push(`${path} lists ${sources.length} sources; at most ${maxVariablesSources} are allowed: merge some ConfigMaps or Secrets`);
  for (const [index, source] of sources.entries()) {
    const refs = [source.configMapRef && "configMapRef", source.secretRef && "secretRef"].filter(Boolean);
    if (refs.length !== 1) {
      problems.push(
        `${path}[${index}] must set exactly one of configMapRef and secretRef (it sets ` +
          `${refs.length === 0 ? "neither" : "both"}); split it into one entry per source`,
      );
    }
    for (const ref of [source.configMapRef, source.secretRef]) {
      if (ref && !isDnsSubdomain(ref.name))
        problems.push(`${path}[${index}]: ${JSON.stringify(ref.name)} is not a valid ConfigMap or Secret name (a lowercase DNS subdomain)`);
    }
  }
  return problems;
}
