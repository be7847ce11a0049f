// The phases of a reconcile pass, in the order they run (Cluster API's `phases` list): each `(pass) => Promise<PhaseResult>`.
import { reconcileActiveJob } from "./phase-active-job.js";
import { reconcileCredentials } from "./phase-credentials.js";
import { reconcileDecision } from "./phase-decision.js";
import { reconcileDeletionFacts } from "./phase-deletion-facts.js";
import { reconcileDrift } from "./phase-drift.js";
import { reconcileHealth } from "./phase-health.js";
import { reconcileHeldExports } from "./phase-held-exports.js";
import { reconcileInputs } from "./phase-inputs.js";
import { reconcileJobs } from "./phase-jobs.js";
import { reconcileOperation } from "./phase-operation.js";
import { reconcileOutputs } from "./phase-outputs.js";
import { reconcilePlans } from "./phase-plans.js";
import { reconcileRetainedState } from "./phase-retained-state.js";
import { reconcileState } from "./phase-state.js";
import { reconcileDelete } from "./reconcile-delete.js";
import type { Phase } from "./types.js";

/** Observe (inputs to health), decide, then delete or act, then the outputs the status records. */
export const passPhases: readonly { name: string; phase: Phase }[] = [
  { name: "inputs", phase: reconcileInputs },
  { name: "credentials", phase: reconcileCredentials },
  { name: "jobs", phase: reconcileJobs },
  { name: "heldExports", phase: reconcileHeldExports },
  { name: "state", phase: reconcileState },
  { name: "activeJob", phase: reconcileActiveJob },
  { name: "retainedState", phase: reconcileRetainedState },
  { name: "plans", phase: reconcilePlans },
  { name: "drift", phase: reconcileDrift },
  { name: "health", phase: reconcileHealth },
  { name: "deletionFacts", phase: reconcileDeletionFacts },
  { name: "decision", phase: reconcileDecision },
  { name: "delete", phase: reconcileDelete },
  { name: "operation", phase: reconcileOperation },
  { name: "outputs", phase: reconcileOutputs },
];
