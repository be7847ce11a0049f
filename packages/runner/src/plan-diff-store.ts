import { readFileSync } from "node:fs";
import { labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";
import { planDiffDataKey, planDiffSecretName } from "@captf/contract/plan-diff";
import type { PlanSummary } from "@captf/contract/run-result";
import type { ApiEndpoint, EventType, ObjectReference } from "./events.js";
import type { Logger } from "./log.js";
import type { PlanDocument } from "./plan.js";
import { encodePlanDiff, planDiffOf } from "./plan-diff.js";
import type { Redactor } from "./redact.js";

/** What a run hands the keeper once show-json is read and judged. */
export interface PlanDiffInput {
  plan: PlanDocument;
  summary: PlanSummary;
  /** The run's redactor, the plan's sensitive values in it: a string it changes is masked. */
  redact: Redactor;
  emit: (type: EventType, reason: "PlanDiffNotKept", action: string, note: string) => void;
  log: Logger;
}

/** Keeps a plan's diff beside the object; never throws: a diff not kept is an event and a log line, not a failed run. */
export type PlanDiffKeeper = (input: PlanDiffInput) => Promise<void>;

/**
 * The plan diff Secret: owned by the object (deleted with it), labelled with its owner's kind and name, its one
 * key the gzipped diff. Not `captf.io/managed`: the manager caches those Secrets with their data and reads no
 * diff. Not controller-owned and without blockOwnerDeletion, so the runner's ServiceAccount needs no right on
 * the object itself.
 */
export function planDiffSecret(object: ObjectReference, data: Buffer): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: planDiffSecretName(object),
      namespace: object.namespace,
      labels: {
        [labels.ownerKind]: object.kind,
        [labels.ownerName]: nameLabelValue(object.name),
      },
      ownerReferences: [{ apiVersion: object.apiVersion, kind: object.kind, name: object.name, uid: object.uid }],
    },
    type: "Opaque",
    data: { [planDiffDataKey]: data.toString("base64") },
  };
}

/** One request to the API server (the broker in a Job); resolves with the status code, never with the body. */
async function send(endpoint: ApiEndpoint, method: string, path: string, body: string, timeoutMs: number): Promise<number> {
  const url = new URL(`${endpoint.server.replace(/\/+$/, "")}${path}`);
  const http = url.protocol === "https:" ? process.getBuiltinModule("node:https") : process.getBuiltinModule("node:http");
  const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "application/json" };
  const token = endpoint.tokenFile ? readFileSync(endpoint.tokenFile, "utf8").trim() : "";
  if (token) headers.Authorization = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, ...(endpoint.ca ? { ca: endpoint.ca } : {}) }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.on("error", reject);
    });
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on("close", () => clearTimeout(timer));
    request.on("error", reject);
    request.end(body);
  });
}

/** Replaces the object's plan diff Secret, or creates it the first time. */
async function writeSecret(endpoint: ApiEndpoint, secret: Record<string, unknown>, timeoutMs: number): Promise<void> {
  const { name, namespace } = secret.metadata as { name: string; namespace: string };
  const collection = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  const body = JSON.stringify(secret);
  let status = await send(endpoint, "PUT", `${collection}/${name}`, body, timeoutMs);
  if (status === 404) status = await send(endpoint, "POST", collection, body, timeoutMs);
  if (status < 200 || status >= 300) throw new Error(`the API server answered ${status} to writing Secret ${namespace}/${name}`);
}

export interface PlanDiffKeeperOptions {
  endpoint: Promise<ApiEndpoint>;
  /** The run's object (--event-object): the Secret's owner and name. */
  object: ObjectReference;
  job: string;
  timeoutMs?: number;
  /** The largest compressed diff kept; maxPlanDiffBytes unless a test asks for less. */
  maxBytes?: number;
}

export function createPlanDiffKeeper(options: PlanDiffKeeperOptions): PlanDiffKeeper {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return async ({ plan, summary, redact, emit, log }) => {
    const name = planDiffSecretName(options.object);
    try {
      const diff = planDiffOf(plan, { planHash: summary.hash, job: options.job }, (text) => redact(text) !== text);
      const { data, omitted } = encodePlanDiff(diff, options.maxBytes);
      await writeSecret(await options.endpoint, planDiffSecret(options.object, data), timeoutMs);
      if (omitted) {
        log.error("the plan's diff was not kept", { secret: name, reason: omitted });
        emit("Warning", "PlanDiffNotKept", "show-json", `plan ${summary.hash}: ${omitted}`);
        return;
      }
      log.info("plan diff kept", { secret: name, bytes: data.length, resources: diff.resources.length });
    } catch (error) {
      const reason = (error as Error).message;
      log.error("the plan's diff was not kept", { secret: name, reason });
      emit("Warning", "PlanDiffNotKept", "show-json", `plan ${summary.hash}: its diff was not kept in Secret ${name}: ${reason}`);
    }
  };
}
