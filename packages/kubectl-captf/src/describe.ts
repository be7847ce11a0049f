/**
 * `describe cluster`: the tree of a cluster's Terraform objects, each with its conditions (Ready
 * first), its running Jobs and its last run, in the manner of `clusterctl describe cluster`.
 * Building and formatting the tree are pure; the command reads the objects and Jobs.
 */
import { kinds } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";
import type { ActiveJob, CaptfObject, Condition, LastRun } from "./objects.js";

/** A Job of an object, as its labels and status describe it. */
export interface JobSummary {
  name: string;
  ownerKind: string;
  /** The owner-name label: the object's name, or its 16-hex hash past 63 characters. */
  ownerName: string;
  operation: string;
  attempt: number;
  createdAt?: string;
  /** Running, or not started yet: no Complete or Failed condition. */
  running: boolean;
  /** Complete or Failed, once finished. */
  outcome?: "Complete" | "Failed";
}

export interface TreeNode {
  kind: string;
  name: string;
  /** Ready first, then the others in the order the manager wrote them. */
  conditions: Condition[];
  /** The Job the manager reports running (status.activeJob). */
  activeJob?: ActiveJob;
  /** Jobs of the object that have not finished, as the API lists them. */
  runningJobs: JobSummary[];
  lastRun?: LastRun;
  /** Set when the node stands for an object that was named but could not be read: why. */
  unreadable?: string;
  children: TreeNode[];
}

export interface ClusterTree {
  cluster: string;
  namespace: string;
  root: TreeNode;
}

export function readyFirst(conditions: readonly Condition[] | undefined): Condition[] {
  const all = conditions ?? [];
  return [...all.filter((c) => c.type === "Ready"), ...all.filter((c) => c.type !== "Ready")];
}

function nodeOf(object: CaptfObject, jobs: readonly JobSummary[], children: TreeNode[] = []): TreeNode {
  const status = object.status ?? {};
  return {
    kind: object.kind,
    name: object.metadata.name,
    conditions: readyFirst(status.conditions),
    ...(status.activeJob ? { activeJob: status.activeJob } : {}),
    runningJobs: jobs.filter(
      (job) => job.running && job.ownerKind === object.kind && job.ownerName === nameLabelValue(object.metadata.name),
    ),
    ...(status.lastRun ? { lastRun: status.lastRun } : {}),
    children,
  };
}

const byName = (a: CaptfObject, b: CaptfObject) => a.metadata.name.localeCompare(b.metadata.name);

/** The cluster, its identity (when named), then its machine pools and machines, each sorted by name. */
export function buildClusterTree(input: {
  cluster: string;
  namespace: string;
  terraformCluster: CaptfObject;
  identityName?: string;
  identity?: CaptfObject;
  /** Why the named identity could not be read (not found, forbidden). */
  identityUnreadable?: string;
  machines: readonly CaptfObject[];
  pools: readonly CaptfObject[];
  jobs: readonly JobSummary[];
}): ClusterTree {
  const children: TreeNode[] = [];
  if (input.identity) children.push(nodeOf(input.identity, []));
  else if (input.identityName)
    children.push({
      kind: kinds.clusterIdentity,
      name: input.identityName,
      conditions: [],
      runningJobs: [],
      unreadable: input.identityUnreadable ?? "not found",
      children: [],
    });
  for (const pool of [...input.pools].sort(byName)) children.push(nodeOf(pool, input.jobs));
  for (const machine of [...input.machines].sort(byName)) children.push(nodeOf(machine, input.jobs));
  return { cluster: input.cluster, namespace: input.namespace, root: nodeOf(input.terraformCluster, input.jobs, children) };
}

/** `5s`, `3m`, `2h`, `4d`: kubectl's coarse age. */
export function age(since: string | undefined, now: number): string {
  if (!since) return "";
  const seconds = Math.max(0, Math.floor((now - Date.parse(since)) / 1000));
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

/** `apply succeeded`, `apply failed at plan: <summary>`, … */
export function describeLastRun(run: LastRun): string {
  if (!run.error) return `${run.operation} succeeded (Job ${run.job})`;
  const where = run.error.step ? ` at ${run.error.step}` : "";
  const summary = run.error.summary ? `: ${run.error.summary.split("\n")[0]}` : "";
  return `${run.operation} failed (${run.error.kind}${where}) (Job ${run.job})${summary}`;
}

function nodeLines(node: TreeNode, now: number): string[] {
  if (node.unreadable) return [node.unreadable];
  const lines: string[] = [];
  if (node.conditions.length === 0) lines.push("no conditions yet");
  const width = Math.max(...node.conditions.map((c) => c.type.length), 0);
  for (const condition of node.conditions) {
    const when = age(condition.lastTransitionTime, now);
    const message = condition.message ? `  ${condition.message.split("\n")[0]}` : "";
    lines.push(
      `${condition.type.padEnd(width)}  ${condition.status.padEnd(7)}  ${condition.reason ?? ""}${when ? ` (${when})` : ""}${message}`,
    );
  }
  const running = new Map(node.runningJobs.map((job) => [job.name, job]));
  if (node.activeJob) {
    running.delete(node.activeJob.name);
    const { name, operation, attempt, startTime } = node.activeJob;
    const started = age(startTime, now);
    lines.push(`active Job: ${name} (${operation}, attempt ${attempt}${started ? `, started ${started} ago` : ""})`);
  }
  for (const job of running.values()) lines.push(`running Job: ${job.name} (${job.operation}, attempt ${job.attempt})`);
  if (node.lastRun) lines.push(`last run: ${describeLastRun(node.lastRun)}`);
  return lines;
}

/** The tree as text: each object's `Kind/name`, then its details, indented under tree branches. */
export function formatClusterTree(tree: ClusterTree, now: number): string {
  const out: string[] = [`Cluster ${tree.namespace}/${tree.cluster}`];
  const walk = (node: TreeNode, prefix: string, last: boolean, top: boolean): void => {
    const branch = top ? "" : last ? "└─ " : "├─ ";
    const under = top ? "" : last ? "   " : "│  ";
    out.push(`${prefix}${branch}${node.kind}/${node.name}`);
    const childPrefix = prefix + under;
    const detailBar = node.children.length > 0 ? "│  " : "   ";
    for (const line of nodeLines(node, now)) out.push(`${childPrefix}${detailBar}${line}`);
    node.children.forEach((child, index) => walk(child, childPrefix, index === node.children.length - 1, false));
  };
  walk(tree.root, "", true, true);
  return `${out.join("\n")}\n`;
}
