/**
 * The act step: the decision recorded, and its operation executed (start-operation.ts: the leases, a Job slot, the durable inputs
 * of an apply, the Job and its per-run Secret), or the wait that holds it back.
 */
import { jobRun, type RunFacts } from "./decide-operation.js";
import { settlingJobSlot } from "./job-slots.js";
import { failedApplyBefore } from "./observe-jobs.js";
import { resolveCredentials } from "./phase-credentials.js";
import { recordDecision } from "./phase-decision.js";
import { activeJobOf } from "./pass-status.js";
import { startOperation } from "./start-operation.js";
import { next, type Phase, type ReconcilePass } from "./types.js";

/** What picks the run of an operation (attempt, inputs hash, image): the Jobs, the hashes and what the last apply ran. Pure. */
export function runFacts(pass: ReconcilePass): RunFacts {
  const { object, durable, facts } = pass;
  const { state, restoreSet } = facts;
  return {
    jobs: facts.jobs,
    image: object.spec.source.image,
    ...(facts.currentHash ? { currentInputsHash: facts.currentHash } : {}),
    ...(state.kind === "ok" && state.state.inputsHash ? { stateInputsHash: state.state.inputsHash } : {}),
    ...(durable
      ? {
          applied: {
            inputsHash: durable.inputsHash,
            image: durable.image,
            ...(durable.imageDigest ? { imageDigest: durable.imageDigest } : {}),
            unpullableImages: durable.unpullableImages,
          },
        }
      : {}),
    ...(restoreSet
      ? { restore: { ...(restoreSet.inputsHash ? { inputsHash: restoreSet.inputsHash } : {}), firstSecret: restoreSet.names[0]! } }
      : {}),
  };
}

/** Executes the decision's operation in a Job slot; the Job it started (or adopted) is the pass's running Job. */
async function startDecided(pass: ReconcilePass): Promise<void> {
  const { deps, adapter, namespace, name, scope, facts } = pass;
  const decision = facts.decision!;
  if (scope.deleting && deps.credentials && !scope.paused) await resolveCredentials(pass, deps.credentials);
  const run = jobRun({ ...decision, op: decision.op! }, runFacts(pass));
  const started = await settlingJobSlot(deps.jobSlots, `${namespace}/${adapter.kind}/${name}`, () =>
    startOperation({
      ...pass,
      decision,
      run,
      inputs: facts.inputs,
      credentials: facts.credentials,
      terraformCluster: facts.terraformCluster,
      restoreSet: facts.restoreSet,
      jobPolicy: facts.jobPolicy,
      serviceAccountRefusal: facts.serviceAccountRefusal,
      forceUnlock: facts.lock.kind === "stale" ? facts.lock.unlockId : undefined,
      afterFailedApply: failedApplyBefore(facts.jobs),
      appliedInputsHash: facts.state.kind === "ok" ? facts.state.state.inputsHash : undefined,
    }),
  );
  facts.action = started.action;
  if (started.requeueAfterMs !== undefined) facts.requeueAfterMs = started.requeueAfterMs;
  if (started.wait) pass.outcome.wait = started.wait;
  if (started.job) facts.active = { ...started.job, bookkept: false, deadlineExceeded: false, remediation: Boolean(decision.remediation) };
}

export const reconcileOperation: Phase = async (pass) => {
  const { facts } = pass;
  const decision = facts.decision!;
  recordDecision(pass);
  facts.action = decision.reason;
  facts.requeueAfterMs = decision.requeueAfterMs;
  if (decision.op) await startDecided(pass);
  if (facts.active) pass.outcome.active = activeJobOf(facts.active);
  return next;
};
