/**
 * `plan show --diff`: the pending plan's diff, which the plan's Job kept in the object's plan diff
 * Secret (contract/plan-diff.ts). Read, checked against status.plan by a pure decision, printed.
 */
import { gunzipSync } from "node:zlib";
import { planDiffDataKey, planDiffSecretName, readPlanDiff, type PlanDiff } from "@captf/contract/plan-diff";
import { pendingPlan, type Decision } from "./decisions.js";
import { isObjectNotFound, isStatus, type Connection } from "./kube.js";
import { describeObject, Refusal, type CaptfObject } from "./objects.js";
import { formatPlanDiff } from "./plan-diff-format.js";

/** What the plan diff Secret held: its data key's bytes, or that there is none or it may not be read. */
export type KeptDiff = { data: Buffer } | { missing: "not-found" | "forbidden" | "no-data"; secret: string };

/** The plan a diff is shown for: the one waiting for approval (status.plan), or the destructive plan the last apply stopped before. */
export interface ShownPlan {
  job: string;
  /** status.plan's hash; a blocked plan's is the diff's own. */
  planHash?: string;
  /** The last apply stopped before this plan's deletes or replacements (DestructivePlanBlocked). */
  blocked: boolean;
}

/** status.plan when a plan waits; else the plan of a last apply blocked before destroying; else why there is none. */
export function shownPlan(object: CaptfObject): Decision<ShownPlan> {
  const pending = pendingPlan(object);
  if ("ok" in pending) return { ok: { job: pending.ok.job, planHash: pending.ok.planHash, blocked: false } };
  const last = object.status?.lastRun;
  if (last?.error?.kind === "blocked") return { ok: { job: last.job, blocked: true } };
  return { refused: `${pending.refused}, and its last apply was not blocked before destroying or replacing resources` };
}

function missingDiff(kept: Exclude<KeptDiff, { data: Buffer }>, where: string, logsCommand: string): { refused: string } {
  if (kept.missing === "forbidden")
    return {
      refused:
        `the diff of ${where} is kept in Secret ${kept.secret}, which you may not read: reading it takes get on that Secret ` +
        `(docs/kubectl-captf.md); ${logsCommand} prints the plan`,
    };
  const found = kept.missing === "no-data" ? `has no ${planDiffDataKey}` : "does not exist";
  return {
    refused:
      `no diff is kept for ${where}: Secret ${kept.secret} ${found} ` +
      `(its runner kept none: see the Job's PlanDiffNotKept event); ${logsCommand} prints the plan`,
  };
}

/**
 * The diff of the plan shown for `object` ({@link shownPlan}), or why it cannot be shown: no such plan, no diff kept,
 * a diff of another plan (superseded, or a newer plan not yet shown), a diff too large to keep. Pure.
 */
export function planDiffDecision(object: CaptfObject, kept: KeptDiff, logsCommand: string): Decision<{ plan: ShownPlan; diff: PlanDiff }> {
  const shown = shownPlan(object);
  if ("refused" in shown) return shown;
  const plan = shown.ok;
  const what = plan.blocked ? `the plan Job ${plan.job} was blocked before` : `plan ${plan.planHash} (Job ${plan.job})`;
  const where = `${describeObject(object)}'s ${what}`;
  if ("missing" in kept) return missingDiff(kept, where, logsCommand);
  let document: unknown;
  try {
    document = JSON.parse(gunzipSync(kept.data).toString("utf8"));
  } catch (error) {
    return { refused: `the diff of ${where} could not be read: ${(error as Error).message}` };
  }
  const diff = readPlanDiff(document);
  if (typeof diff === "string") return { refused: `the diff of ${where} could not be read: ${diff}` };
  if (plan.blocked ? diff.job !== plan.job : diff.planHash !== plan.planHash)
    return {
      refused:
        `the diff kept is of plan ${diff.planHash} (Job ${diff.job}), not of ${plan.blocked ? "" : "the pending "}${what}: ` +
        `that plan's diff was not kept, or a newer plan is being made (plan show says which waits)`,
    };
  if (diff.omitted) return { refused: `the diff of ${where} was not kept: ${diff.omitted}; ${logsCommand} prints the plan` };
  return { ok: { plan: { ...plan, planHash: diff.planHash }, diff } };
}

async function readKeptDiff(connection: Connection, object: CaptfObject): Promise<KeptDiff> {
  const secret = planDiffSecretName({ namespace: connection.namespace, kind: object.kind, name: object.metadata.name });
  try {
    const found = await connection.core.readNamespacedSecret({ namespace: connection.namespace, name: secret });
    const data = found.data?.[planDiffDataKey];
    return data ? { data: Buffer.from(data, "base64") } : { missing: "no-data", secret };
  } catch (error) {
    if (isObjectNotFound(error)) return { missing: "not-found", secret };
    if (isStatus(error, 403)) return { missing: "forbidden", secret };
    throw error;
  }
}

/** Prints the pending plan's diff like `tofu show`, or as JSON: the object, the plan it is of, the masked change set. */
export async function showPlanDiff(
  connection: Connection,
  object: CaptfObject,
  referenceText: string,
  format: "text" | "json",
  out: { write(text: string): unknown },
): Promise<void> {
  const decision = planDiffDecision(object, await readKeptDiff(connection, object), `kubectl captf logs ${referenceText}`);
  if ("refused" in decision) throw new Refusal(decision.refused);
  const { plan, diff } = decision.ok;
  if (format === "json") {
    const subject = { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
    const shown = { planHash: plan.planHash, job: plan.job, ...(plan.blocked ? { blocked: true } : {}) };
    out.write(`${JSON.stringify({ object: subject, plan: shown, diff }, null, 2)}\n`);
    return;
  }
  const blocked = plan.blocked ? ", which it stopped before destroying or replacing resources (DestructivePlanBlocked)" : "";
  out.write(`${describeObject(object)}: plan ${plan.planHash}, made by Job ${plan.job}${blocked}\n\n${formatPlanDiff(diff)}`);
}
