import type { BrokerRequestTarget } from "@captf/contract/run-result";
import { stateLockLeaseName, stateSecretName } from "@captf/render";
import { planDiffDataKey, planDiffSecretName } from "@captf/contract/plan-diff";
import type { ObjectReference } from "../events.js";

/**
 * What the state broker lets a Job's module container do with the API server: exactly the requests
 * the kubernetes state backend and the runner's events make for this one object. Pure: the server
 * (server.ts) asks these functions about every request and its body.
 */

/** The one object a broker serves. */
export interface BrokerScope {
  namespace: string;
  /** The object's state suffix: the label the backend's list is narrowed to. */
  stateSuffix: string;
  /** `tfstate-default-<suffix>`; its `-part-N` chunks are the same state. */
  stateSecret: string;
  /** `lock-tfstate-default-<suffix>`. */
  lockLease: string;
  /** The object's plan diff Secret (contract/plan-diff.ts): the runner replaces or creates it after a plan, nothing else. */
  planDiffSecret: string;
  /** The object the run's events must be about. */
  object: ObjectReference;
}

export function brokerScope(object: ObjectReference, stateSuffix: string): BrokerScope {
  return {
    namespace: object.namespace,
    stateSuffix,
    stateSecret: stateSecretName(stateSuffix),
    lockLease: stateLockLeaseName(stateSuffix),
    planDiffSecret: planDiffSecretName(object),
    object,
  };
}

/** What a refused or allowed request was aimed at: the label of the broker's counts and logs. */
export type RequestTarget = BrokerRequestTarget;

/** How an allowed request is checked further: its body, or the list it answers. */
export type BodyCheck = "state-name" | "lock-name" | "event-regarding";

export type BrokerDecision =
  | { allowed: true; target: Exclude<RequestTarget, "other">; bodyCheck?: BodyCheck; filterList?: true }
  | { allowed: false; target: RequestTarget; why: string };

/**
 * The verbs each runtime's backend was measured to use in every operation (broker-backend.integration.test.ts;
 * docs/security.md lists them): OpenTofu 1.12 and Terraform 1.5.7 get, create and update the state
 * Secret, list the Secrets by label at init, and get, create and update the lock Lease. Neither
 * deletes anything: only `workspace delete` would, which no Job runs.
 */
const stateItemVerbs = new Set(["GET", "PUT"]);
const lockItemVerbs = new Set(["GET", "PUT"]);

const secretsPath = /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/;
const leasesPath = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/;
const eventsPath = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events$/;

/** The state Secret itself or one of its `-part-N` chunks. */
export function isStateSecretName(scope: BrokerScope, name: string): boolean {
  if (name === scope.stateSecret) return true;
  const part = name.startsWith(`${scope.stateSecret}-part-`) ? name.slice(scope.stateSecret.length + "-part-".length) : "";
  return /^(0|[1-9][0-9]{0,5})$/.test(part);
}

function refuse(target: RequestTarget, why: string): BrokerDecision {
  return { allowed: false, target, why };
}

/** Decides a request from its method, path and query alone; bodies are judged by {@link checkBody}. */
export function decideRequest(scope: BrokerScope, method: string, path: string, query: URLSearchParams): BrokerDecision {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return refuse("other", "the path is not valid percent-encoding");
  }
  // Decoded separators or dot segments could make a name mean another path upstream.
  if (decoded !== path || path.split("/").some((segment) => segment === "." || segment === ".."))
    return refuse("other", "the path must be plain, without encoded characters or dot segments");
  if (query.has("watch") || query.has("fieldSelector")) return refuse("other", "watches and field selectors are not part of a state run");

  const secrets = secretsPath.exec(path);
  if (secrets) {
    const [, namespace, name] = secrets;
    if (namespace !== scope.namespace) return refuse("other", `Secrets of namespace ${namespace} are not this object's`);
    if (name === undefined) {
      if (method === "GET") return { allowed: true, target: "state", filterList: true };
      if (method === "POST") return { allowed: true, target: "state", bodyCheck: "state-name" };
      return refuse("other", `${method} on the Secrets collection is not part of a state run`);
    }
    if (name === scope.planDiffSecret) {
      if (method !== "PUT") return refuse("state", `${method} on the plan diff Secret is not part of a run: it is only replaced`);
      return { allowed: true, target: "state", bodyCheck: "state-name" };
    }
    if (!isStateSecretName(scope, name)) return refuse("other", `Secret ${name} is not this object's state`);
    if (!stateItemVerbs.has(method)) return refuse("state", `${method} on the state Secret is not part of a state run`);
    return { allowed: true, target: "state", ...(method === "PUT" ? { bodyCheck: "state-name" as const } : {}) };
  }

  const leases = leasesPath.exec(path);
  if (leases) {
    const [, namespace, name] = leases;
    if (namespace !== scope.namespace) return refuse("other", `Leases of namespace ${namespace} are not this object's`);
    if (name === undefined) {
      if (method === "POST") return { allowed: true, target: "lock", bodyCheck: "lock-name" };
      return refuse("other", `${method} on the Leases collection is not part of a state run`);
    }
    if (name !== scope.lockLease) return refuse("other", `Lease ${name} is not this object's state lock`);
    if (!lockItemVerbs.has(method)) return refuse("lock", `${method} on the state lock is not part of a state run`);
    return { allowed: true, target: "lock", ...(method === "PUT" ? { bodyCheck: "lock-name" as const } : {}) };
  }

  const events = eventsPath.exec(path);
  if (events) {
    if (events[1] !== scope.namespace) return refuse("event", `events of namespace ${events[1]} are not about this object`);
    if (method !== "POST") return refuse("event", `${method} on events is not part of a run`);
    return { allowed: true, target: "event", bodyCheck: "event-regarding" };
  }
  return refuse("other", "not a request of the state backend or the runner's events");
}

type AnyObject = Record<string, unknown>;

function record(value: unknown): AnyObject | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as AnyObject) : undefined;
}

/**
 * Judges the JSON body of an allowed request that carries one: a Secret or Lease must be named as this
 * object's state or lock, in its namespace; an event must be about this object. A reason when refused.
 */
export function checkBody(scope: BrokerScope, check: BodyCheck, body: unknown, pathName?: string): string | undefined {
  const object = record(body);
  const metadata = record(object?.metadata);
  if (!object || !metadata) return "the body is not a JSON object with metadata";
  if (metadata.namespace !== undefined && metadata.namespace !== scope.namespace)
    return `the body's namespace ${String(metadata.namespace)} is not this object's`;
  if (check === "state-name" || check === "lock-name") {
    const name = metadata.name;
    if (typeof name !== "string") return "the body names no object";
    if (pathName !== undefined && name !== pathName) return `the body names ${name}, the path ${pathName}`;
    if (check === "state-name" && name === scope.planDiffSecret) return checkPlanDiffBody(scope, object);
    if (check === "state-name" && !isStateSecretName(scope, name)) return `Secret ${name} is not this object's state`;
    if (check === "state-name" && object.kind !== undefined && object.kind !== "Secret")
      return `the body is a ${String(object.kind)}, not a Secret`;
    if (check === "lock-name" && name !== scope.lockLease) return `Lease ${name} is not this object's state lock`;
    return undefined;
  }
  const regarding = record(object.regarding);
  const expected = scope.object;
  if (!regarding) return "the event is about nothing";
  if (
    regarding.kind !== expected.kind ||
    regarding.name !== expected.name ||
    regarding.namespace !== expected.namespace ||
    regarding.uid !== expected.uid ||
    regarding.apiVersion !== expected.apiVersion
  ) {
    return `the event is about ${String(regarding.kind)} ${String(regarding.namespace)}/${String(regarding.name)}, not this run's object`;
  }
  return undefined;
}

/** The plan diff Secret as the runner writes it: owned by this object alone, its one key the diff, nothing else. */
function checkPlanDiffBody(scope: BrokerScope, secret: AnyObject): string | undefined {
  if (secret.kind !== undefined && secret.kind !== "Secret") return `the body is a ${String(secret.kind)}, not a Secret`;
  const owners = record(secret.metadata)?.ownerReferences;
  const { object } = scope;
  const owner = Array.isArray(owners) && owners.length === 1 ? record(owners[0]) : undefined;
  if (!owner || owner.uid !== object.uid || owner.kind !== object.kind || owner.name !== object.name || owner.controller === true)
    return "the plan diff Secret must be owned by this run's object alone (not as its controller)";
  if (secret.stringData !== undefined) return "the plan diff Secret takes no stringData";
  const keys = Object.keys(record(secret.data) ?? {});
  if (keys.length !== 1 || keys[0] !== planDiffDataKey) return `the plan diff Secret's data is its one key ${planDiffDataKey}`;
  return undefined;
}

/**
 * The list's query as forwarded: the backend lists every state Secret of the namespace (`tfstate=true`),
 * each with its data, to find workspaces; asking for this object's suffix alone keeps the others' data
 * away from the broker and the API server's answer small.
 */
export function narrowListQuery(scope: BrokerScope, query: URLSearchParams): URLSearchParams {
  const narrowed = new URLSearchParams(query);
  const selector = query.get("labelSelector");
  narrowed.set("labelSelector", `${selector ? `${selector},` : ""}tfstateSecretSuffix=${scope.stateSuffix}`);
  return narrowed;
}

/** A Secret list narrowed to this object's state Secrets: the backend lists by label, which any Secret can carry. */
export function narrowSecretList(scope: BrokerScope, list: unknown): unknown {
  const object = record(list);
  if (!object || !Array.isArray(object.items)) return list;
  return { ...object, items: object.items.filter((item) => isStateSecretName(scope, String(record(record(item)?.metadata)?.name ?? ""))) };
}
