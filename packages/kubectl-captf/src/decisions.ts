/**
 * The plugin's decisions, pure: which plan to approve (or why not), which backup to restore (or
 * why not), which Job and pod hold the last runner log. The commands read and write around them.
 */
import { annotations, kinds } from "@captf/contract/api";
import type { JobSummary } from "./describe.js";
import { describeObject, type CaptfObject, type PlanPreview } from "./objects.js";

export type Decision<T> = { ok: T } | { refused: string };

/** `add 1, change 0, destroy 2` plus import, move and output changes when the plan has them. */
export function planCounts(plan: PlanPreview): string {
  const base = [`add ${plan.add ?? 0}`, `change ${plan.change ?? 0}`, `destroy ${plan.destroy ?? 0}`];
  const extra = [
    ...(plan.import ? [`import ${plan.import}`] : []),
    ...(plan.move ? [`move ${plan.move}`] : []),
    ...(plan.outputChanges ? [`output changes ${plan.outputChanges}`] : []),
  ];
  return [...base, ...extra].join(", ");
}

/** The pending plan of an object, or why it has none. */
export function pendingPlan(object: CaptfObject): Decision<PlanPreview> {
  if (object.kind !== kinds.cluster)
    return {
      refused: `${describeObject(object)} has no plans: only a TerraformCluster with applyPolicy Manual waits for approval (status.plan)`,
    };
  const plan = object.status?.plan;
  if (!plan) return { refused: `${describeObject(object)} has no plan waiting for approval (status.plan is empty)` };
  return { ok: plan };
}

export interface PlanApproval {
  planHash: string;
  /** The annotation already names this hash: nothing to write. */
  alreadyApproved: boolean;
}

/**
 * Approve the pending plan, and only the one the caller saw: `expectedHash` (from `plan show`)
 * must equal status.plan.planHash, or the plan changed since it was shown.
 */
export function approvalDecision(object: CaptfObject, expectedHash: string | undefined): Decision<PlanApproval> {
  const pending = pendingPlan(object);
  if ("refused" in pending) return pending;
  const plan = pending.ok;
  if (expectedHash !== undefined && expectedHash !== plan.planHash) {
    return {
      refused:
        `the plan of ${describeObject(object)} changed since it was shown: it is now ${plan.planHash} (${planCounts(plan)}), ` +
        `not ${expectedHash}; review it with plan show and approve that hash`,
    };
  }
  return { ok: { planHash: plan.planHash, alreadyApproved: object.metadata.annotations?.[annotations.approvePlan] === plan.planHash } };
}

/** Restore a backup the object lists, once: the manager never runs the same serial twice. */
export function restoreDecision(object: CaptfObject, serial: number): Decision<{ serial: number; alreadyRequested: boolean }> {
  if (!Number.isSafeInteger(serial) || serial < 1)
    return { refused: `--serial ${serial} is not a state serial: give a positive integer from status.stateBackups` };
  const backups = object.status?.stateBackups ?? [];
  if (!backups.some((backup) => backup.serial === serial)) {
    const listed = backups.length === 0 ? "it lists no backups" : `it lists ${backups.map((backup) => backup.serial).join(", ")}`;
    return { refused: `${describeObject(object)} has no backup of serial ${serial} in status.stateBackups (${listed})` };
  }
  if (object.status?.lastRestoredSerial === serial && object.metadata.annotations?.[annotations.restoreState] !== String(serial)) {
    return {
      refused:
        `serial ${serial} of ${describeObject(object)} was restored already (status.lastRestoredSerial); the manager ` +
        `runs a serial once`,
    };
  }
  return { ok: { serial, alreadyRequested: object.metadata.annotations?.[annotations.restoreState] === String(serial) } };
}

/** The newest Job of an object: the one whose runner log `logs` shows. */
export function lastJob(jobs: readonly JobSummary[]): JobSummary | undefined {
  return [...jobs]
    .sort((a, b) => (a.createdAt ?? "").localeCompare(b.createdAt ?? "") || a.attempt - b.attempt || a.name.localeCompare(b.name))
    .at(-1);
}

export interface PodSummary {
  name: string;
  createdAt?: string;
  phase?: string;
}

/** The newest pod of a Job (a Job of captf has backoffLimit 0, so at most one, but a deleted pod may be replaced). */
export function lastPod(pods: readonly PodSummary[]): PodSummary | undefined {
  return [...pods].sort((a, b) => (a.createdAt ?? "").localeCompare(b.createdAt ?? "") || a.name.localeCompare(b.name)).at(-1);
}

/** `plan show`'s text. */
export function formatPlan(object: CaptfObject, plan: PlanPreview, reference: string): string {
  const approvedHash = object.metadata.annotations?.[annotations.approvePlan];
  const approvedBy = object.metadata.annotations?.[annotations.planApprovedBy];
  const lines = [
    `${describeObject(object)}: plan ${plan.planHash}`,
    `  ${planCounts(plan)}`,
    `  made by Job ${plan.job}${plan.createdAt ? ` at ${plan.createdAt}` : ""} for inputs ${plan.inputsHash}`,
  ];
  if (plan.resources?.length) {
    lines.push("  resources:");
    for (const entry of plan.resources) lines.push(`    ${entry}`);
    if (plan.truncated) lines.push("    … (more resources than status.plan lists)");
  }
  lines.push(`what it changes: kubectl captf plan show ${reference} --diff`);
  if (approvedHash === plan.planHash)
    lines.push(`approved${approvedBy ? ` by ${approvedBy}` : ""}: the manager applies it if it plans the same again`);
  else lines.push(`approve it: kubectl captf plan approve ${reference} --hash ${plan.planHash}`);
  return `${lines.join("\n")}\n`;
}
