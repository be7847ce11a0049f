/**
 * `plan show --diff`: the pending plan's diff, which the plan's Job kept in the object's plan diff
 * Secret (contract/plan-diff.ts). Read, checked against status.plan by a pure decision, printed.
 */
import { gunzipSync } from "node:zlib";
import { planDiffDataKey, planDiffSecretName, readPlanDiff, type PlanDiff } from "@captf/contract/plan-diff";
import { pendingPlan, type Decision } from "./decisions.js";
import { isObjectNotFound, isStatus, type Connection } from "./kube.js";
import { describeObject, Refusal, type CaptfObject, type PlanPreview } from "./objects.js";
import { formatPlanDiff } from "./plan-diff-format.js";

/** What the plan diff Secret held: its data key's bytes, or that there is none or it may not be read. */
export type KeptDiff = { data: Buffer } | { missing: "not-found" | "forbidden" | "no-data"; secret: string };

/**
 * The diff of the plan pending on `object`, or why it cannot be shown: no plan pending, no diff kept,
 * a diff of another plan (superseded, or a newer plan not yet shown), a diff too large to keep. Pure.
 */
export function planDiffDecision(
  object: CaptfObject,
  kept: KeptDiff,
  logsCommand: string,
): Decision<{ plan: PlanPreview; diff: PlanDiff }> {
  const pending = pendingPlan(object);
  if ("refused" in pending) return pending;
  const plan = pending.ok;
  const where = `${describeObject(object)}'s plan ${plan.planHash} (Job ${plan.job})`;
  if ("missing" in kept) {
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
  let document: unknown;
  try {
    document = JSON.parse(gunzipSync(kept.data).toString("utf8"));
  } catch (error) {
    return { refused: `the diff of ${where} could not be read: ${(error as Error).message}` };
  }
  const diff = readPlanDiff(document);
  if (typeof diff === "string") return { refused: `the diff of ${where} could not be read: ${diff}` };
  if (diff.planHash !== plan.planHash)
    return {
      refused:
        `the diff kept is of plan ${diff.planHash} (Job ${diff.job}), not of the pending ${plan.planHash} (Job ${plan.job}): ` +
        `the pending plan's diff was not kept, or a newer plan is being made (plan show says which waits)`,
    };
  if (diff.omitted) return { refused: `the diff of ${where} was not kept: ${diff.omitted}; ${logsCommand} prints the plan` };
  return { ok: { plan, diff } };
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
    out.write(`${JSON.stringify({ object: subject, plan: { planHash: plan.planHash, job: plan.job }, diff }, null, 2)}\n`);
    return;
  }
  out.write(`${describeObject(object)}: plan ${plan.planHash}, made by Job ${plan.job}\n\n${formatPlanDiff(diff)}`);
}
