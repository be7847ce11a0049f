// The writes the phases and the act step share: the durable inputs' notes, a merge patch of the object, a Job's per-run Secret.
import type { Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import { renderBackendRoot, type GeneratedRoot } from "@captf/render";
import type { V1Job } from "@kubernetes/client-node";
import { workspaceResourceType } from "../api/resource-types.js";
import { runSecretName } from "../jobs/build-job.js";
import { isConflict } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { InputsOutcome } from "./compute-status.js";
import type { Operation } from "./decide-operation.js";
import { annotateDurableInputs, type DurableInputs } from "./durable-inputs.js";
import type { Pass } from "./types.js";

/** Sends what the phases recorded on the durable inputs, as one patch (none when they recorded nothing). */
export async function writeDurableNotes(pass: Pass): Promise<void> {
  const { deps, adapter, namespace, name, durable, durableNotes } = pass;
  if (!durable || Object.keys(durableNotes.annotations).length === 0) return;
  const data = Object.keys(durableNotes.data).length > 0 ? durableNotes.data : undefined;
  await annotateDurableInputs(deps.client, adapter.role, namespace, name, durableNotes.annotations, data);
  pass.durableNotes = { annotations: {}, data: {} };
}

/** A merge patch of the object itself (its annotations). */
export function patchObject(pass: Pass, body: unknown): Promise<unknown> {
  const { deps, adapter, namespace, name } = pass;
  return deps.client.patch(workspaceResourceType(adapter), namespace, name, body, "merge");
}

/** The root an operation runs in: apply and plan the current inputs; the others what was applied. */
export function rootForOperation(
  op: Operation,
  inputs: InputsOutcome<{ root: GeneratedRoot; held?: boolean }>,
  durable: DurableInputs | undefined,
  role: Role,
): GeneratedRoot | undefined {
  if (op === "apply" || op === "plan") return inputs.kind === "ready" ? inputs.rendered.root : undefined;
  // A pool holding a change of its exports checks the exports it applied: the waiting change is not drift.
  if ((op === "refresh" || op === "drift") && inputs.kind === "ready" && inputs.rendered.held) return inputs.rendered.root;
  if (op === "restore") return renderBackendRoot();
  if (durable) return durable.root;
  // Clusters and pools may fall back to fresh inputs; a machine's destroy must use what it applied.
  return role !== "machine" && inputs.kind === "ready" ? inputs.rendered.root : undefined;
}

/** The per-run Secret holding the rendered root, owned by its Job so it goes with it. */
export async function createRunSecret(client: KubeApi, namespace: string, job: V1Job, files: GeneratedRoot): Promise<void> {
  await client
    .create(builtinTypes.secret, namespace, {
      metadata: {
        name: runSecretName(job.metadata!.name!),
        labels: { [labels.managed]: "true" },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }],
      },
      stringData: { ...files },
    })
    .catch((error) => (isConflict(error) ? undefined : Promise.reject(error)));
}
