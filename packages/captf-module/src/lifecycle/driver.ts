// Runs the steps against a cluster: each step's writes, then a poll of the object until what the step waits for holds
// or its time is up, recording the conditions seen on the way. One failed step skips the rest but the destroy, which
// always runs so the test leaves nothing behind.
import type { Clock, Condition, KubeObject, LifecycleClient } from "./client.js";
import { jobSelector, leftoverNames, ownerRef, subjectRef, type LifecycleOptions } from "./objects.js";
import { lifecyclePlan, type Observation, type StepDefinition, type StepName, type Wait } from "./steps.js";

export type Outcome = "passed" | "failed" | "not-supported" | "skipped";

export interface StepReport {
  readonly name: StepName;
  readonly title: string;
  readonly outcome: Outcome;
  readonly seconds: number;
  /** What the step waited for (steps that ran). */
  readonly waitedFor?: string;
  /** Failed: what it saw instead, or why it could not start. Not supported or skipped: why. */
  readonly message?: string;
  /** The object's conditions at the step's end. */
  readonly conditions: readonly Condition[];
  /** Every status/reason each condition type went through during the step, in order. */
  readonly conditionsSeen: Readonly<Record<string, readonly string[]>>;
}

export interface LifecycleReport {
  readonly role: string;
  readonly namespace: string;
  readonly image: string;
  readonly object: string;
  readonly passed: boolean;
  readonly seconds: number;
  readonly steps: readonly StepReport[];
}

class ConditionLog {
  readonly seen: Record<string, string[]> = {};
  last: readonly Condition[] = [];
  record(object: KubeObject | undefined): void {
    if (!object) return;
    this.last = object.status?.conditions ?? [];
    for (const condition of this.last) {
      const value = `${condition.status}/${condition.reason ?? ""}`;
      const values = (this.seen[condition.type] ??= []);
      if (values[values.length - 1] !== value) values.push(value);
    }
  }
}

async function observe(client: LifecycleClient, options: LifecycleOptions, wait: Wait, suffix: { value?: string }): Promise<Observation> {
  const subject = await client.get(subjectRef(options));
  const owner = await client.get(ownerRef(options));
  const stateSuffix = subject?.status?.stateSecretSuffix;
  if (typeof stateSuffix === "string") suffix.value = stateSuffix;
  if (!wait.leftovers) return { subject, owner, leftovers: [] };
  const names = (objects: KubeObject[]) => objects.map((object) => object.metadata.name);
  const found = {
    secrets: names(await client.list("v1", "Secret", options.namespace)),
    leases: names(await client.list("coordination.k8s.io/v1", "Lease", options.namespace)),
    jobs: names(await client.list("batch/v1", "Job", options.namespace, jobSelector(options))),
  };
  return { subject, owner, leftovers: leftoverNames(options, suffix.value, found) };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs `steps` (the role's plan by default) and reports each. Never throws for a step's failure. */
export async function runLifecycle(
  client: LifecycleClient,
  clock: Clock,
  options: LifecycleOptions,
  steps: readonly StepDefinition[] = lifecyclePlan(options),
): Promise<LifecycleReport> {
  const started = clock.now();
  const suffix: { value?: string } = {};
  const reports: StepReport[] = [];
  let failedStep: StepName | undefined;
  const seconds = (from: number) => Math.round((clock.now() - from) / 100) / 10;
  for (const step of steps) {
    const stepStart = clock.now();
    const log = new ConditionLog();
    const base = { name: step.name, title: step.title };
    if (step.unavailable) {
      reports.push({
        ...base,
        outcome: step.unavailable.outcome,
        seconds: 0,
        message: step.unavailable.reason,
        conditions: [],
        conditionsSeen: {},
      });
      continue;
    }
    if (failedStep && step.name !== "destroy") {
      reports.push({
        ...base,
        outcome: "skipped",
        seconds: 0,
        message: `the ${failedStep} step failed`,
        conditions: [],
        conditionsSeen: {},
      });
      continue;
    }
    let waitedFor: string | undefined;
    let outcome: Outcome = "failed";
    let message: string | undefined;
    const context = { client, options };
    try {
      const before = await client.get(subjectRef(options));
      log.record(before);
      const wait = await step.act(context, before);
      waitedFor = wait.what;
      for (;;) {
        const observation = await observe(client, options, wait, suffix);
        log.record(observation.subject);
        const saw = wait.check(observation);
        if (saw === undefined) {
          outcome = "passed";
          break;
        }
        if (clock.now() - stepStart >= options.stepTimeoutSeconds * 1000) {
          message = `waited ${options.stepTimeoutSeconds} s for ${wait.what}; saw ${saw}`;
          break;
        }
        await clock.sleep(options.pollSeconds * 1000);
      }
    } catch (error) {
      message = errorMessage(error);
    }
    if (step.after) {
      try {
        await step.after(context);
      } catch (error) {
        message = `${message ? `${message}; ` : ""}putting back what the step changed: ${errorMessage(error)}`;
        outcome = "failed";
      }
    }
    if (outcome === "failed") failedStep ??= step.name;
    reports.push({
      ...base,
      outcome,
      seconds: seconds(stepStart),
      ...(waitedFor ? { waitedFor } : {}),
      ...(message ? { message } : {}),
      conditions: log.last,
      conditionsSeen: log.seen,
    });
  }
  const subject = subjectRef(options);
  return {
    role: options.role,
    namespace: options.namespace,
    image: options.image,
    object: `${subject.kind}/${subject.name}`,
    passed: reports.every((report) => report.outcome !== "failed"),
    seconds: seconds(started),
    steps: reports,
  };
}
