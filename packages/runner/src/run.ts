import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RunnerEventReason } from "@captf/contract/api";
import { ChangesScanner } from "./changes.js";
import { type Changes } from "@captf/contract/run-result";
import { endedChildrenCpuSeconds, monotonicMs, ownCpuSeconds, wholeSeconds } from "./durations.js";
import type { EventRecorder, EventType } from "./events.js";
import { runStep, type StepOutcome } from "./exec.js";
import type { PlanDiffKeeper } from "./plan-diff-store.js";
import { createLogger, type Logger } from "./log.js";
import {
  blockedSummary,
  destructiveChanges,
  emptyPlanSummary,
  noDrift,
  parsePlanDocument,
  planChangedSummary,
  planSensitiveValues,
  summarizeDrift,
  summarizePlan,
  type PlanDocument,
} from "./plan.js";
import { planCounts, type PlanSummary } from "@captf/contract/run-result";
import {
  environmentSecrets,
  planSecrets,
  RedactingLineWriter,
  redactor,
  secretsOf,
  variableSecrets,
  type Redactor,
  type Secret,
} from "./redact.js";
import { resultVersion, type ErrorKind, type RunResult } from "@captf/contract/run-result";
import { checksPlanBeforeApply, erroredStateFile, erroredStatePushStep, restoreStateFile, stepsFor, type StepInvocation } from "./steps.js";
import { type FailurePoint, type Operation } from "@captf/contract/run-result";
import { failureSummary, stateNotSavedSummary } from "./summary.js";
import { decryptIfEncrypted, encryptingRuntimeProblem, encryptionSecrets, encryptionVariable } from "./state-encryption.js";
import { noRunTracing, startRunTracing, type RunTracing } from "./tracing.js";
import { assembleRestoreState, checkImageLayout, countManagedAddresses, prepareWorkspace, type PreparedWorkspace } from "./workspace.js";

/** Everything `runner run` was told, flags parsed. */
export interface RunOptions {
  op: Operation;
  bin: string[];
  image: string;
  moduleDir: string;
  providersDir: string;
  workdir: string;
  configDir: string;
  backendConfig: string[];
  lockTimeoutMs: number;
  stopTimeoutMs: number;
  forceUnlock?: string | undefined;
  guardDeletes: boolean;
  inputsHash?: string | undefined;
  allowDeletesHash?: string | undefined;
  expectPlan?: string | undefined;
  restoreChunks: number;
  restoreResources: number;
  /** The object encrypts its state (spec.stateEncryption): TF_ENCRYPTION is kept, required, and only a runtime that encrypts runs. */
  stateEncryption?: boolean;
}

export interface RunIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The container's environment; the steps get a rewritten copy. */
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted on SIGTERM: the running step is stopped and the run ends `interrupted`. */
  signal: AbortSignal;
  events: EventRecorder;
  /**
   * What the first step waits for (the state broker sidecar), and the values it brings to redact (its token); a rejection fails
   * the run in prepare.
   */
  ready?: Promise<{ secrets: readonly string[] }>;
  /** Keeps the diff of a plan the result reports (plan-diff-store.ts): a plan Job's, or one that stopped an apply. */
  keepPlanDiff?: PlanDiffKeeper;
}

export interface RunOutcome {
  result: RunResult;
  exitCode: 0 | 1;
}

function roundSeconds(milliseconds: number): number {
  return Math.round(milliseconds / 10) / 100;
}

/** The runner's own CPU seconds and its commands' together, for its last log line: its container's, less its launch. */
function runCpu(): { cpuSeconds: number | undefined; commandsCpuSeconds: number | undefined } {
  return { cpuSeconds: cpuSince(0, ownCpuSeconds()), commandsCpuSeconds: endedChildrenCpuSeconds() };
}

/** CPU seconds between two readings, to the hundredth; undefined without them (not Linux). */
function cpuSince(before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined ? undefined : Math.round((after - before) * 100) / 100;
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The runtime's version from `version -json`; informational, so any failure gives "". */
async function runtimeVersion(bin: readonly string[], prepared: PreparedWorkspace, signal: AbortSignal): Promise<string> {
  const outcome = await runStep({
    command: [...bin, "version", "-json"],
    cwd: prepared.rootDir,
    // One core: it runs beside the first step, which should keep the others.
    env: { ...prepared.env, GOMAXPROCS: "1" },
    captureStdout: true,
    signal,
    stopTimeoutMs: 1000,
  });
  try {
    const version = (JSON.parse(outcome.stdout) as { terraform_version?: unknown }).terraform_version;
    return typeof version === "string" ? version : "";
  } catch {
    return "";
  }
}

/** Why a run stopped short: what the result's error says, and the exit code. */
interface Stop {
  kind: ErrorKind;
  step: FailurePoint | null;
  summary: string;
}

/** What a step's outcome means for the run: stop it, go on to the next step, or end it having succeeded. */
type StepVerdict = Stop | "next" | "done";

/** One run's state: what it was told, the result it fills, the secrets it redacts, and how it reports. */
class Run {
  readonly started = monotonicMs();
  readonly result: RunResult;
  readonly log: Logger;
  readonly lockTimeoutSeconds: number;
  redact: Redactor = redactor([]);
  /** The runtime's version: informational, started beside the first step so it never delays it. */
  version: Promise<string> = Promise.resolve("");
  startVersion: () => void = () => {};
  /** A plan's human output, held until show-json has named its sensitive values. */
  heldPlanOutput = "";
  tracing: RunTracing = noRunTracing;
  private secrets: Secret[] = [];

  constructor(
    readonly options: RunOptions,
    readonly io: RunIo,
  ) {
    this.result = {
      version: resultVersion,
      op: options.op,
      image: { ref: options.image, providersMirror: false },
      runtime: { command: [...options.bin], version: "" },
      steps: [],
      drift: null,
      error: null,
    };
    this.log = createLogger(io.stderr, () => this.redact);
    this.lockTimeoutSeconds = wholeSeconds(options.lockTimeoutMs);
  }

  emit(type: EventType, reason: RunnerEventReason, action: string, note: string | Promise<string>): void {
    this.io.events.emit(
      type,
      reason,
      action,
      Promise.resolve(note).then((text) => this.redact(text)),
    );
  }

  addSecrets(more: Secret[]): void {
    this.secrets = [...this.secrets, ...more];
    this.redact = redactor(this.secrets);
  }

  releasePlanOutput(): void {
    if (this.heldPlanOutput) this.io.stdout(this.redact(this.heldPlanOutput));
    this.heldPlanOutput = "";
  }
}

/**
 * Runs one operation: preflight, prepare, then the runtime steps of {@link stepsFor}, deciding
 * after each what comes next. Returns the result document and the exit code; never throws for
 * anything a module, an image or the runtime can do.
 */
export async function runOperation(options: RunOptions, io: RunIo): Promise<RunOutcome> {
  const run = new Run(options, io);
  run.tracing = await startRunTracing(io.env);
  const prepared = await prepare(run);
  if ("kind" in prepared) return finish(run, prepared);
  startVersionBesideFirstStep(run, prepared);
  const brokerStop = await waitForBroker(run);
  if (brokerStop) return finish(run, brokerStop);
  return finish(run, await runSteps(run, prepared));
}

/** Ends the run: the result's error, the RunFinished event and log line, the exit code. */
async function finish(run: Run, stop: Stop | undefined): Promise<RunOutcome> {
  const { options, result } = run;
  run.startVersion();
  result.runtime.version = await run.version;
  const took = roundSeconds(monotonicMs() - run.started);
  const traced = { op: options.op, image: options.image, runtimeVersion: result.runtime.version };
  await run.tracing.finish(stop ? { ...traced, error: { kind: stop.kind, step: stop.step } } : traced);
  if (!stop) {
    run.emit("Normal", "RunFinished", options.op, `${options.op} succeeded in ${took}s`);
    run.log.info("run finished", { op: options.op, seconds: took, ...runCpu() });
    return { result, exitCode: 0 };
  }
  result.error = { kind: stop.kind, step: stop.step, summary: run.redact(stop.summary) };
  const outcome = {
    "image-layout": "failed: the image does not follow the image contract",
    step: "failed",
    interrupted: "was interrupted",
    blocked: "was blocked before a plan that deletes or replaces resources",
    "plan-changed": "stopped: the plan differs from the approved one",
    "state-save": "failed: its new state could not be saved",
  }[stop.kind];
  const where = stop.step && stop.kind !== "image-layout" ? ` in step ${stop.step}` : "";
  run.emit("Warning", "RunFinished", options.op, `${options.op} ${outcome}${where} after ${took}s (exit 1)`);
  run.log.error("run finished", { op: options.op, error: stop.kind, step: stop.step ?? undefined, seconds: took, ...runCpu() });
  return { result, exitCode: 1 };
}

function prepareFailed(run: Run, summary: string): Stop {
  run.log.error("prepare failed", { reason: summary });
  return { kind: "step", step: "prepare", summary };
}

/** Preflight and prepare: the image's layout, the work directory, the secrets to redact, the state's encryption. */
async function prepare(run: Run): Promise<PreparedWorkspace | Stop> {
  const { options, io } = run;
  try {
    await checkImageLayout({ moduleDir: options.moduleDir, bin: options.bin, path: io.env.PATH });
  } catch (error) {
    run.log.error("preflight failed", { reason: (error as Error).message });
    return { kind: "image-layout", step: null, summary: (error as Error).message };
  }
  let prepared: PreparedWorkspace;
  try {
    prepared = await prepareWorkspace({
      configDir: options.configDir,
      workdir: options.workdir,
      providersDir: options.providersDir,
      baseEnv: io.env,
      stateEncryption: Boolean(options.stateEncryption),
    });
    if (options.op === "restore")
      await assembleRestoreState({ configDir: options.configDir, workdir: options.workdir, chunks: options.restoreChunks });
  } catch (error) {
    return prepareFailed(run, (error as Error).message);
  }
  run.result.image.providersMirror = prepared.providersMirror;
  run.addSecrets([
    ...environmentSecrets(prepared.env),
    ...variableSecrets(
      await readOptional(join(prepared.rootDir, "main.tf.json")),
      await readOptional(join(prepared.rootDir, "terraform.tfvars.json")),
    ),
  ]);
  if (prepared.dropped.length > 0) run.log.info("ignoring environment variables the runner owns", { names: prepared.dropped });
  return (await prepareEncryption(run, prepared)) ?? prepared;
}

/** Encrypted state (spec.stateEncryption): only a runtime that encrypts gets to write it; an encrypted backup is restored plain. */
async function prepareEncryption(run: Run, prepared: PreparedWorkspace): Promise<Stop | undefined> {
  const { options, io } = run;
  const encryption = prepared.env[encryptionVariable];
  if (!options.stateEncryption) return undefined;
  if (!encryption) {
    return prepareFailed(
      run,
      `the object encrypts its state, but ${encryptionVariable} is empty: nothing ran, so no state is written in plain`,
    );
  }
  run.addSecrets(encryptionSecrets(encryption));
  const problem = await encryptingRuntimeProblem(options.bin, prepared, io.signal);
  if (problem) {
    run.log.error("preflight failed", { reason: problem });
    return { kind: "image-layout", step: null, summary: problem };
  }
  if (options.op !== "restore") return undefined;
  const file = join(options.workdir, restoreStateFile);
  try {
    await decryptIfEncrypted({ ...options, prepared, file, signal: io.signal, redact: run.redact });
  } catch (error) {
    return prepareFailed(run, `the backup is encrypted and ${(error as Error).message}`);
  }
  return undefined;
}

/** The runtime's version is informational: it starts once the first step has (never delaying it) and runs beside it. */
function startVersionBesideFirstStep(run: Run, prepared: PreparedWorkspace): void {
  const { options, io } = run;
  const versionStarted = new Promise<void>((resolve) => (run.startVersion = resolve));
  run.version = versionStarted.then(() => runtimeVersion(options.bin, prepared, io.signal));
  run.emit(
    "Normal",
    "RunStarted",
    options.op,
    run.version.then((v) => `${options.op} started: image ${options.image || "(unknown)"}, runtime ${v || "version unknown"}`),
  );
}

/** Waits for the state broker sidecar, if there is one, and takes its token to redact. */
async function waitForBroker(run: Run): Promise<Stop | undefined> {
  if (!run.io.ready) return undefined;
  // The runtime's version needs no broker: it runs while the run waits.
  run.startVersion();
  try {
    run.addSecrets(secretsOf((await run.io.ready).secrets));
    return undefined;
  } catch (error) {
    return prepareFailed(run, (error as Error).message);
  }
}

/** The runtime steps in order, each judged by {@link afterStep}. */
async function runSteps(run: Run, prepared: PreparedWorkspace): Promise<Stop | undefined> {
  const { options, io } = run;
  const steps = stepsFor(options.op, {
    workdir: options.workdir,
    backendConfig: options.backendConfig,
    lockTimeoutSeconds: run.lockTimeoutSeconds,
    forceUnlockId: options.forceUnlock,
    guardDeletes: options.guardDeletes,
    expectPlan: options.expectPlan,
  });
  const checked = checksPlanBeforeApply(options.op, options);
  let lastPlanExit: number | undefined;
  for (const step of steps) {
    if (step.name === "show-json" && lastPlanExit !== 2) continue;
    if (io.signal.aborted) {
      return { kind: "interrupted", step: step.name, summary: `the run was stopped before step ${step.name} started` };
    }
    run.emit("Normal", "StepStarted", step.name, `step ${step.name} started`);
    run.log.info("step started", { step: step.name });
    const childrenCpu = endedChildrenCpuSeconds();
    const running = execute(run, prepared, step);
    run.startVersion();
    const outcome = await running;
    run.result.steps.push({ name: step.name, exit: outcome.exit, seconds: outcome.seconds });
    // The CPU its command (and the providers that command started) used; the first step's includes `version`, run beside it.
    const cpuSeconds = cpuSince(childrenCpu, endedChildrenCpuSeconds());
    run.log.info("step finished", { step: step.name, exit: outcome.exit, seconds: outcome.seconds, cpuSeconds });
    if (step.name === "plan") lastPlanExit = outcome.exit;
    const verdict = await afterStep(run, prepared, step, outcome, checked);
    if (verdict === "done") return undefined;
    if (verdict !== "next") return verdict;
  }
  return undefined;
}

/** What a finished step means: a failure, an empty plan, a plan to judge, a restored state to check, or a success. */
async function afterStep(
  run: Run,
  prepared: PreparedWorkspace,
  step: StepInvocation,
  outcome: StepOutcome,
  checked: boolean,
): Promise<StepVerdict> {
  if (failed(step, outcome)) return stepFailure(run, prepared, step, outcome);
  if (step.name === "plan" && outcome.exit === 0) return afterEmptyPlan(run, step, outcome, checked);
  if (step.name === "show-json") return afterShowJson(run, step, outcome);
  if (step.name === "state-list") {
    const stop = checkRestoredState(run, step, outcome);
    if (stop) return stop;
  }
  run.emit("Normal", "StepSucceeded", step.name, `step ${step.name} succeeded (exit ${outcome.exit}) in ${outcome.seconds}s`);
  const changes = run.result.changes;
  if ((step.name === "apply" || step.name === "destroy") && changes) {
    const { add, change, destroy } = changes;
    const counts = `${add} added, ${change} changed, ${destroy} destroyed, ${changes.import ?? 0} imported`;
    run.emit("Normal", "ResourcesChanged", step.name, `${step.name} changed resources: ${counts}`);
  }
  return "next";
}

/** A failed step stops the run; a failed apply or destroy first pushes the state it could not save. */
async function stepFailure(run: Run, prepared: PreparedWorkspace, step: StepInvocation, outcome: StepOutcome): Promise<Stop> {
  const { io } = run;
  run.releasePlanOutput();
  const fallback = outcome.failure
    ? `step ${step.name} exited ${outcome.exit}: ${outcome.failure}`
    : `step ${step.name} exited ${outcome.exit}; see the Job's logs`;
  const summary = failureSummary({ step: step.name, stdout: outcome.stdout, stderrTail: outcome.stderrTail, fallback }, run.redact);
  run.emit("Warning", "StepFailed", step.name, `step ${step.name} failed (exit ${outcome.exit}) after ${outcome.seconds}s: ${summary}`);
  if ((step.name === "apply" || step.name === "destroy") && !io.signal.aborted && (await pushErroredState(run, prepared)) === "failed") {
    return { kind: "state-save", step: step.name, summary: stateNotSavedSummary(step.name, summary) };
  }
  return { kind: io.signal.aborted ? "interrupted" : "step", step: step.name, summary };
}

/** A plan with no changes: a checked apply ends here, having changed nothing. */
function afterEmptyPlan(run: Run, step: StepInvocation, outcome: StepOutcome, checked: boolean): StepVerdict {
  const { options, result } = run;
  run.releasePlanOutput();
  run.emit("Normal", "StepSucceeded", step.name, `step ${step.name} succeeded (exit 0) in ${outcome.seconds}s`);
  run.emit("Normal", "PlanSummary", step.name, "plan: no changes");
  if (options.op === "drift") result.drift = noDrift();
  if (options.op === "plan") result.plan = emptyPlanSummary();
  if (!checked) return "next";
  run.log.info("the plan has no changes; skipping the apply step");
  result.changes = { add: 0, change: 0, destroy: 0 };
  return "done";
}

/** show-json: the plan document's sensitive values join the redactor, then the plan is judged. */
async function afterShowJson(run: Run, step: StepInvocation, outcome: StepOutcome): Promise<StepVerdict> {
  let plan: PlanDocument;
  try {
    plan = parsePlanDocument(outcome.stdout);
  } catch (error) {
    run.releasePlanOutput();
    const summary = (error as Error).message;
    run.emit("Warning", "StepFailed", step.name, `step ${step.name} failed: ${summary}`);
    return { kind: "step", step: step.name, summary };
  }
  run.addSecrets(planSecrets(planSensitiveValues(plan)));
  run.releasePlanOutput();
  run.emit("Normal", "StepSucceeded", step.name, `step ${step.name} succeeded (exit 0) in ${outcome.seconds}s`);
  const stop = judgePlan(run, plan);
  const { result, io, redact, log } = run;
  if (result.plan && io.keepPlanDiff) {
    await io.keepPlanDiff({ plan, summary: result.plan, redact, log, emit: (...event) => run.emit(...event) });
  }
  return stop ?? "next";
}

/** A restore whose backup had resources must not end with a state that lists none. */
function checkRestoredState(run: Run, step: StepInvocation, outcome: StepOutcome): Stop | undefined {
  const managed = countManagedAddresses(outcome.stdout);
  run.log.info("the restored state lists managed resource instances", { count: managed });
  if (managed > 0 || run.options.restoreResources === 0) return undefined;
  const summary = `the restored state lists no managed resources, but the backup has ${run.options.restoreResources}`;
  run.emit("Warning", "StepFailed", step.name, `step ${step.name} failed: ${summary}`);
  return { kind: "step", step: step.name, summary };
}

/** Runs one step with its output redacted on the way out; records the changes an apply or destroy reports. */
async function execute(run: Run, prepared: PreparedWorkspace, step: StepInvocation): Promise<StepOutcome> {
  const { options, io } = run;
  const currentRedactor = () => run.redact;
  const stdout = new RedactingLineWriter(io.stdout, currentRedactor);
  const stderr = new RedactingLineWriter(io.stderr, currentRedactor);
  const scanner = step.name === "apply" || step.name === "destroy" ? new ChangesScanner() : undefined;
  const passThrough = step.stdout === "log" || step.stdout === "capture-and-log";
  const runRuntime = (traceEnv: Readonly<Record<string, string>> | undefined) =>
    runStep({
      command: [...options.bin, ...step.args],
      cwd: prepared.rootDir,
      env: traceEnv ? { ...prepared.env, ...traceEnv } : prepared.env,
      captureStdout: step.stdout !== "log" && step.stdout !== "hold-for-plan",
      onStdout: (text) => {
        scanner?.write(text);
        if (passThrough) stdout.write(text);
        else if (step.stdout === "hold-for-plan") run.heldPlanOutput += text;
      },
      onStderr: (text) => stderr.write(text),
      signal: io.signal,
      stopTimeoutMs: options.stopTimeoutMs,
    });
  const outcome = await run.tracing.step(step.name, runRuntime, (finished) => failed(step, finished));
  stdout.flush();
  stderr.flush();
  const changes: Changes | undefined = scanner?.changes();
  if (changes) run.result.changes = changes;
  return outcome;
}

/** After show-json: fill the result, and stop a checked apply whose plan is not approved. */
function judgePlan(run: Run, plan: PlanDocument): Stop | undefined {
  const { options, result } = run;
  if (options.op === "drift") {
    result.drift = summarizeDrift(plan);
    const { add, change, destroy } = result.drift;
    run.emit("Normal", "PlanSummary", "show-json", `plan: ${planCounts({ add, change, destroy })}`);
    return undefined;
  }
  const summary: PlanSummary = summarizePlan(plan);
  run.emit("Normal", "PlanSummary", "show-json", `plan: ${planCounts(summary)}`);
  run.log.info("plan computed", {
    hash: summary.hash,
    add: summary.add,
    change: summary.change,
    destroy: summary.destroy,
    import: summary.import ?? 0,
    move: summary.move ?? 0,
  });
  if (options.op === "plan") {
    result.plan = summary;
    return undefined;
  }
  if (options.expectPlan) {
    if (summary.hash === options.expectPlan) return undefined;
    result.plan = summary;
    return { kind: "plan-changed", step: null, summary: planChangedSummary(options.expectPlan, summary) };
  }
  const destructive = destructiveChanges(plan);
  if (destructive.length === 0) return undefined;
  const approved = Boolean(options.allowDeletesHash) && options.allowDeletesHash === options.inputsHash;
  if (approved) {
    run.log.info("applying an approved plan that deletes or replaces resources", {
      inputsHash: options.inputsHash,
      count: destructive.length,
    });
    return undefined;
  }
  result.plan = summary;
  return { kind: "blocked", step: null, summary: blockedSummary(destructive) };
}

/**
 * A failed apply or destroy that could not save its state leaves errored.tfstate: push it, or the
 * work is lost. "failed": neither the step nor the push saved it (the Secret keeps the older state).
 */
async function pushErroredState(run: Run, workspace: PreparedWorkspace): Promise<"none" | "pushed" | "failed"> {
  const { options, io, log } = run;
  if (!existsSync(join(workspace.rootDir, erroredStateFile))) return "none";
  // tofu wrote it encrypted, and state push reads it as plain: decrypted first.
  if (options.stateEncryption) {
    const file = join(workspace.rootDir, erroredStateFile);
    const decrypted = await decryptIfEncrypted({ ...options, prepared: workspace, file, signal: io.signal, redact: run.redact }).catch(
      (error: unknown) => (error as Error).message,
    );
    if (typeof decrypted === "string") {
      log.error("errored.tfstate is encrypted and could not be decrypted: the new state is lost with this Job's work directory", {
        reason: decrypted,
      });
      return "failed";
    }
  }
  const step = erroredStatePushStep(run.lockTimeoutSeconds);
  log.info("pushing the state the failed step could not save", { file: erroredStateFile });
  const outcome = await execute(run, workspace, step);
  run.result.steps.push({ name: step.name, exit: outcome.exit, seconds: outcome.seconds });
  if (!failed(step, outcome)) return "pushed";
  log.error("pushing errored.tfstate failed: the new state is lost with this Job's work directory", { exit: outcome.exit });
  return "failed";
}

function failed(step: StepInvocation, outcome: StepOutcome): boolean {
  if (outcome.failure) return true;
  if (step.okExits.includes(outcome.exit)) return false;
  return !step.okIfStderr.some((message) => outcome.stderrTail.includes(message));
}
