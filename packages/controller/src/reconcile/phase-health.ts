// The health phase: the outputs as the state holds them, and the health reading that schedules refreshes.
import { decodeOutputs } from "@captf/contract";
import type { Operation } from "./decide-operation.js";
import { nextPendingRefreshes } from "./decide-operation.js";
import { next, type Phase } from "./types.js";

export const reconcileHealth: Phase = async (pass) => {
  const { adapter, object, scope, facts } = pass;
  const { state, observedInputs } = facts;
  facts.decoding =
    state.kind === "ok"
      ? decodeOutputs(
          adapter.role,
          state.state.outputs,
          observedInputs && !observedInputs.inputs.pending ? observedInputs.inputs.inputs : undefined,
          { fromState: true },
        )
      : undefined;
  const decoding = facts.decoding;
  facts.healthReading = decoding?.outputs.health.state === "ok" ? decoding.outputs.health.value.state : undefined;
  const finishedSucceeded = (ops: Operation[]) => facts.toMark.some((job) => job.outcome === "succeeded" && ops.includes(job.op));
  facts.pendingRefreshes = nextPendingRefreshes((object.status?.pendingRefreshes as number | undefined) ?? 0, facts.healthReading, {
    applied: finishedSucceeded(["apply"]),
    sampled: finishedSucceeded(["refresh", "drift"]),
  });
  if (decoding) scope.fields.pendingRefreshes = facts.pendingRefreshes > 0 ? facts.pendingRefreshes : null;
  return next;
};
