// The state phase: the state (lineage checked), its backups, a requested restore and the state lock; then the durable inputs' notes.
import { next, type Phase } from "./types.js";
import { observeStateAndBackups, writeDurableNotes } from "./workspace-phases.js";

export const reconcileState: Phase = async (pass) => {
  const { facts } = pass;
  facts.active = facts.jobs.find((job) => job.outcome === undefined);
  Object.assign(facts, await observeStateAndBackups(pass, facts.jobs, facts.active, facts.wasProvisioned));
  await writeDurableNotes(pass);
  return next;
};
