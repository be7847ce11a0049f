// Seed 004's lifecycle as step definitions: each does its writes through the injected client and returns what to wait
// for, a pure check of what the driver observes. Field names, annotations and condition reasons are the manager's
// (@captf/contract's api constants, docs/lifecycle.md); what the manager does not expose is said, not faked.
import { annotations } from "@captf/contract/api";
import type { Role } from "@captf/contract/roles";
import type { Condition, KubeObject, LifecycleClient } from "./client.js";
import { bootstrapSecretRef, lifecycleObjects, ownerRef, subjectRef, type LifecycleOptions } from "./objects.js";

export const stepNames = ["apply", "input-change", "drift-check", "member-delete", "state-restore", "destroy"] as const;
export type StepName = (typeof stepNames)[number];

/** What the driver read for one check: the Terraform object, its owner, and what is left of it (when asked for). */
export interface Observation {
  readonly subject: KubeObject | undefined;
  readonly owner: KubeObject | undefined;
  readonly leftovers: readonly string[];
}

export interface Wait {
  /** What the step waits for, in words: a failing step names it. */
  readonly what: string;
  /** Read the object's leftovers (state Secrets, leases, Jobs) on each check. */
  readonly leftovers?: boolean;
  /** Undefined when what it waits for holds, else what it saw instead. */
  check(observation: Observation): string | undefined;
}

export interface StepContext {
  readonly client: LifecycleClient;
  readonly options: LifecycleOptions;
}

/** A step that cannot run for these options: not supported by captf, or not asked for. */
export interface Unavailable {
  readonly outcome: "not-supported" | "skipped";
  readonly reason: string;
}

export interface StepDefinition {
  readonly name: StepName;
  /** One line: what the step does for this role. */
  readonly title: string;
  readonly unavailable?: Unavailable;
  /** The step's writes; `before` is the object as read just before. Returns what to wait for. */
  act(context: StepContext, before: KubeObject | undefined): Promise<Wait>;
  /** Runs after the wait, passed or not: puts back what the step changed for itself. */
  after?(context: StepContext): Promise<void>;
}

/** A step that cannot start (a missing backup, an object that exists already): failed with this message. */
export class StepError extends Error {
  override readonly name = "StepError";
}

export function findCondition(object: KubeObject | undefined, type: string): Condition | undefined {
  return object?.status?.conditions?.find((condition) => condition.type === type);
}

export function describeCondition(condition: Condition | undefined, type: string): string {
  if (!condition) return `no ${type} condition`;
  const message = condition.message ? ` (${condition.message})` : "";
  return `${type}=${condition.status}/${condition.reason ?? ""}${message}`;
}

/** Undefined when condition `type` has this status and (if given) reason, else what it is. */
function expectCondition(object: KubeObject | undefined, type: string, status: string, reason?: string): string | undefined {
  const condition = findCondition(object, type);
  if (condition?.status === status && (reason === undefined || condition.reason === reason)) return undefined;
  return describeCondition(condition, type);
}

interface Status {
  initialization?: { provisioned?: boolean };
  activeJob?: { name?: string; operation?: string };
  lastDriftCheck?: string;
  lastRestoredSerial?: number;
  stateBackups?: { serial: number }[];
}

const statusOf = (object: KubeObject | undefined): Status => (object?.status ?? {}) as Status;

/**
 * Undefined when the object is settled: Ready=True, provisioned, no Job running, Ready computed for its generation;
 * else what it saw.
 */
export function settled(object: KubeObject | undefined): string | undefined {
  if (!object) return "the object does not exist";
  if (object.metadata.deletionTimestamp) return "the object is being deleted";
  const status = statusOf(object);
  const ready = expectCondition(object, "Ready", "True");
  if (ready) return ready;
  if (status.initialization?.provisioned !== true) return "status.initialization.provisioned is not true";
  if (status.activeJob) return `Job ${status.activeJob.name ?? ""} (${status.activeJob.operation ?? "?"}) still runs`;
  // captf writes no status.observedGeneration: each condition carries the generation it was computed for.
  const generation = object.metadata.generation ?? 0;
  const observed = findCondition(object, "Ready")?.observedGeneration;
  if ((observed ?? 0) < generation) return `Ready's observedGeneration ${observed ?? "unset"} < generation ${generation}`;
  return undefined;
}

/** A pool's members as the manager wrote them (spec.providerIDList). */
function members(object: KubeObject | undefined): number {
  const list = object?.spec?.providerIDList;
  return Array.isArray(list) ? list.length : 0;
}

function poolHas(replicas: number): (observation: Observation) => string | undefined {
  return ({ subject }) =>
    members(subject) === replicas ? undefined : `spec.providerIDList has ${members(subject)} members, not ${replicas}`;
}

function all(...checks: ((observation: Observation) => string | undefined)[]): (observation: Observation) => string | undefined {
  return (observation) => {
    for (const check of checks) {
      const saw = check(observation);
      if (saw) return saw;
    }
    return undefined;
  };
}

const isSettled = ({ subject }: Observation) => settled(subject);
const inputsApplied = ({ subject }: Observation) => expectCondition(subject, "InputsApplied", "True", "InputsApplied");

/** Undefined when the object, its owner and everything of it are gone. */
function gone({ subject, owner, leftovers }: Observation): string | undefined {
  if (subject) return `${subject.kind} ${subject.metadata.name} still exists${subject.metadata.deletionTimestamp ? " (deleting)" : ""}`;
  if (owner) return `${owner.kind} ${owner.metadata.name} still exists`;
  if (leftovers.length > 0) return `left behind: ${leftovers.join(", ")}`;
  return undefined;
}

const settledText = "Ready=True of the current generation, provisioned, no Job running";

function applyStep(role: Role): StepDefinition {
  return {
    name: "apply",
    title:
      role === "cluster"
        ? "create the TerraformCluster and its Cluster"
        : `create the ${role === "machine" ? "TerraformMachine and its Machine" : "TerraformMachinePool and its MachinePool"}`,
    async act({ client, options }, before) {
      if (before) throw new StepError(`${before.kind} ${options.namespace}/${options.name} exists already: name another with --name`);
      for (const object of lifecycleObjects(options)) await client.create(object);
      const pool = role === "machinepool";
      return {
        what: `the first apply: ${settledText}${pool ? `, ${options.replicas} members in spec.providerIDList` : ""}`,
        check: pool ? all(isSettled, poolHas(options.replicas)) : isSettled,
      };
    },
  };
}

/** A step the driver reports without running: `unavailable` says why. */
function unavailableStep(name: StepName, title: string, outcome: Unavailable["outcome"], reason: string): StepDefinition {
  return { name, title, unavailable: { outcome, reason }, act: () => Promise.reject(new StepError(reason)) };
}

function inputChangeStep(role: Role, options: LifecycleOptions): StepDefinition {
  const name = "input-change";
  if (role === "machine")
    return unavailableStep(
      name,
      "change an input of the machine",
      "not-supported",
      "a TerraformMachine's spec.source, spec.variables and spec.variablesFrom are immutable: Cluster API replaces a machine, " +
        "it never changes one, so a machine module sees new inputs only as a new Machine (the apply step)",
    );
  if (role === "cluster" && !options.changeVariables)
    return unavailableStep(
      name,
      "change spec.variables of the TerraformCluster",
      "skipped",
      "name the change with --change-variables '<json>': a variable your cluster module declares (the test does not guess one)",
    );
  const variables = options.changeVariables;
  if (role === "cluster")
    return {
      name,
      title: `merge ${JSON.stringify(variables)} into spec.variables`,
      async act({ client, options: o }) {
        await client.patch(subjectRef(o), { spec: { variables } });
        return { what: `an apply of the new inputs: InputsApplied=True, ${settledText}`, check: all(isSettled, inputsApplied) };
      },
    };
  const scaled = options.replicas + 1;
  return {
    name,
    title: `scale the MachinePool to ${scaled}${variables ? ` and merge ${JSON.stringify(variables)} into spec.variables` : ""}`,
    async act({ client, options: o }) {
      await client.patch(ownerRef(o), { spec: { replicas: scaled } });
      if (variables) await client.patch(subjectRef(o), { spec: { variables } });
      return {
        what: `an apply of the new inputs: InputsApplied=True, ${settledText}, ${scaled} members in spec.providerIDList`,
        check: all(isSettled, inputsApplied, poolHas(scaled)),
      };
    },
  };
}

function driftCheckStep(options: LifecycleOptions): StepDefinition {
  let previous: unknown = null;
  return {
    name: "drift-check",
    title: `a drift check (spec.drift.intervalSeconds ${options.driftIntervalSeconds} for the step)`,
    async act({ client, options: o }, before) {
      previous = before?.spec?.drift ?? null;
      const lastCheck = statusOf(before).lastDriftCheck;
      const drift = { ...((previous as Record<string, unknown> | null) ?? {}), intervalSeconds: o.driftIntervalSeconds };
      await client.patch(subjectRef(o), { spec: { drift } });
      return {
        what:
          "a drift check after the step began (status.lastDriftCheck moves): DriftJobSucceeded=True/DriftChecked, " +
          `DriftDetected=False/NoDrift, ${settledText}`,
        check: all(
          ({ subject }) =>
            statusOf(subject).lastDriftCheck !== lastCheck ? undefined : `status.lastDriftCheck still ${lastCheck ?? "unset"}`,
          ({ subject }) => expectCondition(subject, "DriftJobSucceeded", "True", "DriftChecked"),
          ({ subject }) => expectCondition(subject, "DriftDetected", "False", "NoDrift"),
          isSettled,
        ),
      };
    },
    async after({ client, options: o }) {
      await client.patch(subjectRef(o), { spec: { drift: previous } });
    },
  };
}

function memberDeleteStep(role: Role, options: LifecycleOptions): StepDefinition {
  const name = "member-delete";
  if (role === "cluster")
    return unavailableStep(
      name,
      "delete a machine or pool member",
      "skipped",
      "a cluster has no members: its module is tested by the machine and machinepool roles' deletes",
    );
  if (role === "machine")
    return {
      name,
      title: "delete the Machine: Cluster API deletes the TerraformMachine, captf destroys it",
      async act({ client, options: o }) {
        await client.delete(ownerRef(o));
        return {
          what: "the Machine and TerraformMachine gone, with its state, backups, durable inputs, leases and Jobs",
          leftovers: true,
          check: gone,
        };
      },
    };
  return {
    name,
    title: `scale the MachinePool back to ${options.replicas}: the module removes a member`,
    async act({ client, options: o }) {
      await client.patch(ownerRef(o), { spec: { replicas: o.replicas } });
      return { what: `${settledText}, ${o.replicas} members in spec.providerIDList`, check: all(isSettled, poolHas(o.replicas)) };
    },
  };
}

const restoreStep: StepDefinition = {
  name: "state-restore",
  title: `restore the newest state backup (${annotations.restoreState})`,
  async act({ client, options }, before) {
    const serial = statusOf(before).stateBackups?.[0]?.serial;
    if (serial === undefined)
      throw new StepError(
        "no state backup is listed in status.stateBackups (the manager backs up each state serial it reads; --state-backups)",
      );
    await client.patch(subjectRef(options), { metadata: { annotations: { [annotations.restoreState]: String(serial) } } });
    return {
      what:
        `the restore of serial ${serial}: status.lastRestoredSerial ${serial}, ${annotations.restoreState} removed, ` +
        `RestoreJobSucceeded=True/StateRestored, ${settledText}`,
      check: all(
        ({ subject }) => {
          const restored = statusOf(subject).lastRestoredSerial;
          return restored === serial ? undefined : `status.lastRestoredSerial ${restored ?? "unset"}`;
        },
        ({ subject }) =>
          subject?.metadata.annotations?.[annotations.restoreState] === undefined ? undefined : `${annotations.restoreState} still set`,
        ({ subject }) => expectCondition(subject, "RestoreJobSucceeded", "True", "StateRestored"),
        isSettled,
      ),
    };
  },
};

function destroyStep(role: Role): StepDefinition {
  return {
    name: "destroy",
    title:
      role === "cluster"
        ? "delete the Cluster and TerraformCluster: captf destroys"
        : "delete what the test created; captf destroys what is left",
    async act({ client, options }) {
      await client.delete(ownerRef(options));
      await client.delete(subjectRef(options));
      if (role !== "cluster") await client.delete(bootstrapSecretRef(options));
      return {
        what: "the object and its owner gone, with its state, backups, durable inputs, leases and Jobs",
        leftovers: true,
        check: gone,
      };
    },
  };
}

/**
 * The steps for a role, in order. A machine restores its state before it is deleted (a deleted machine has no state
 * to restore), so its delete is its destroy and the destroy step then only clears what the test created.
 */
export function lifecyclePlan(options: LifecycleOptions): StepDefinition[] {
  const { role } = options;
  const steps = [applyStep(role), inputChangeStep(role, options), driftCheckStep(options)];
  if (role === "machine") return [...steps, restoreStep, memberDeleteStep(role, options), destroyStep(role)];
  return [...steps, memberDeleteStep(role, options), restoreStep, destroyStep(role)];
}
