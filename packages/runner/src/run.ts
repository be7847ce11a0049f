import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RunnerEventReason } from "@captf/contract/api";
import { ChangesScanner } from "./changes.js";
import { type Changes } from "@captf/contract/run-result";
import { monotonicMs, wholeSeconds } from "./durations.js";
import type { EventRecorder, EventType } from "./events.js";
import { runStep, type StepOutcome } from "./exec.js";
import { createLogger } from "./log.js";
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
}

export interface RunOutcome {
  result: RunResult;
  exitCode: 0 | 1;
}

function roundSeconds(milliseconds: number): number {
  return Math.round(milliseconds / 10) / 100;
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

/**
 * Runs one operation: preflight, prepare, then the runtime steps of {@link stepsFor}, deciding
 * after each what comes next. Returns the result document and the exit code; never throws for
 * anything a module, an image or the runtime can do.
 */
export async function runOperation(options: RunOptions, io: RunIo): Promise<RunOutcome> {
  const started = monotonicMs();
  const result: RunResult = {
    version: resultVersion,
    op: options.op,
    image: { ref: options.image, providersMirror: false },
    runtime: { command: [...options.bin], version: "" },
    steps: [],
    drift: null,
    error: null,
  };
  let secrets: Secret[] = [];
  let redact: Redactor = redactor([]);
  const currentRedactor = () => redact;
  const log = createLogger(io.stderr, currentRedactor);
  const emit = (type: EventType, reason: RunnerEventReason, action: string, note: string | Promise<string>) =>
    io.events.emit(
      type,
      reason,
      action,
      Promise.resolve(note).then((text) => redact(text)),
    );
  const addSecrets = (more: Secret[]) => {
    secrets = [...secrets, ...more];
    redact = redactor(secrets);
  };
  const lockTimeoutSeconds = wholeSeconds(options.lockTimeoutMs);
  let version: Promise<string> = Promise.resolve("");
  let startVersion = () => {};

  const finish = async (stop: Stop | undefined): Promise<RunOutcome> => {
    startVersion();
    result.runtime.version = await version;
    const took = roundSeconds(monotonicMs() - started);
    if (!stop) {
      emit("Normal", "RunFinished", options.op, `${options.op} succeeded in ${took}s`);
      log.info("run finished", { op: options.op, seconds: took });
      return { result, exitCode: 0 };
    }
    result.error = { kind: stop.kind, step: stop.step, summary: redact(stop.summary) };
    const outcome = {
      "image-layout": "failed: the image does not follow the image contract",
      step: "failed",
      interrupted: "was interrupted",
      blocked: "was blocked before a plan that deletes or replaces resources",
      "plan-changed": "stopped: the plan differs from the approved one",
      "state-save": "failed: its new state could not be saved",
    }[stop.kind];
    const where = stop.step && stop.kind !== "image-layout" ? ` in step ${stop.step}` : "";
    emit("Warning", "RunFinished", options.op, `${options.op} ${outcome}${where} after ${took}s (exit 1)`);
    log.error("run finished", { op: options.op, error: stop.kind, step: stop.step ?? undefined, seconds: took });
    return { result, exitCode: 1 };
  };

  const steps = stepsFor(options.op, {
    workdir: options.workdir,
    backendConfig: options.backendConfig,
    lockTimeoutSeconds,
    forceUnlockId: options.forceUnlock,
    guardDeletes: options.guardDeletes,
    expectPlan: options.expectPlan,
  });

  try {
    await checkImageLayout({ moduleDir: options.moduleDir, bin: options.bin, path: io.env.PATH });
  } catch (error) {
    log.error("preflight failed", { reason: (error as Error).message });
    return finish({ kind: "image-layout", step: null, summary: (error as Error).message });
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
    log.error("prepare failed", { reason: (error as Error).message });
    return finish({ kind: "step", step: "prepare", summary: (error as Error).message });
  }
  result.image.providersMirror = prepared.providersMirror;
  addSecrets([
    ...environmentSecrets(prepared.env),
    ...variableSecrets(
      await readOptional(join(prepared.rootDir, "main.tf.json")),
      await readOptional(join(prepared.rootDir, "terraform.tfvars.json")),
    ),
  ]);
  if (prepared.dropped.length > 0) log.info("ignoring environment variables the runner owns", { names: prepared.dropped });

  // Encrypted state (spec.stateEncryption): only a runtime that encrypts gets to write it; an encrypted backup is restored plain.
  const encryption = prepared.env[encryptionVariable];
  if (options.stateEncryption && !encryption) {
    const summary = `the object encrypts its state, but ${encryptionVariable} is empty: nothing ran, so no state is written in plain`;
    log.error("prepare failed", { reason: summary });
    return finish({ kind: "step", step: "prepare", summary });
  }
  if (options.stateEncryption && encryption) {
    addSecrets(encryptionSecrets(encryption));
    const problem = await encryptingRuntimeProblem(options.bin, prepared, io.signal);
    if (problem) {
      log.error("preflight failed", { reason: problem });
      return finish({ kind: "image-layout", step: null, summary: problem });
    }
    if (options.op === "restore") {
      const file = join(options.workdir, restoreStateFile);
      try {
        await decryptIfEncrypted({ ...options, prepared, file, signal: io.signal, redact });
      } catch (error) {
        const summary = `the backup is encrypted and ${(error as Error).message}`;
        log.error("prepare failed", { reason: summary });
        return finish({ kind: "step", step: "prepare", summary });
      }
    }
  }

  // Informational only, so it starts once the first step has (never delaying it) and runs beside it.
  const versionStarted = new Promise<void>((resolve) => (startVersion = resolve));
  version = versionStarted.then(() => runtimeVersion(options.bin, prepared, io.signal));
  emit(
    "Normal",
    "RunStarted",
    options.op,
    version.then((v) => `${options.op} started: image ${options.image || "(unknown)"}, runtime ${v || "version unknown"}`),
  );

  const checked = checksPlanBeforeApply(options.op, options);
  let lastPlanExit: number | undefined;
  let heldPlanOutput = "";
  const releasePlanOutput = () => {
    if (heldPlanOutput) io.stdout(redact(heldPlanOutput));
    heldPlanOutput = "";
  };

  if (io.ready) {
    // The runtime's version needs no broker: it runs while the run waits.
    startVersion();
    try {
      addSecrets(secretsOf((await io.ready).secrets));
    } catch (error) {
      log.error("prepare failed", { reason: (error as Error).message });
      return finish({ kind: "step", step: "prepare", summary: (error as Error).message });
    }
  }

  for (const step of steps) {
    if (step.name === "show-json" && lastPlanExit !== 2) continue;
    if (io.signal.aborted) {
      return finish({ kind: "interrupted", step: step.name, summary: `the run was stopped before step ${step.name} started` });
    }
    emit("Normal", "StepStarted", step.name, `step ${step.name} started`);
    log.info("step started", { step: step.name });
    const running = execute(step);
    startVersion();
    const outcome = await running;
    result.steps.push({ name: step.name, exit: outcome.exit, seconds: outcome.seconds });
    log.info("step finished", { step: step.name, exit: outcome.exit, seconds: outcome.seconds });

    if (failed(step, outcome)) {
      releasePlanOutput();
      const fallback = outcome.failure
        ? `step ${step.name} exited ${outcome.exit}: ${outcome.failure}`
        : `step ${step.name} exited ${outcome.exit}; see the Job's logs`;
      const summary = failureSummary({ step: step.name, stdout: outcome.stdout, stderrTail: outcome.stderrTail, fallback }, redact);
      emit("Warning", "StepFailed", step.name, `step ${step.name} failed (exit ${outcome.exit}) after ${outcome.seconds}s: ${summary}`);
      if ((step.name === "apply" || step.name === "destroy") && !io.signal.aborted && (await pushErroredState(prepared)) === "failed") {
        return finish({ kind: "state-save", step: step.name, summary: stateNotSavedSummary(step.name, summary) });
      }
      return finish({ kind: io.signal.aborted ? "interrupted" : "step", step: step.name, summary });
    }

    if (step.name === "plan") {
      lastPlanExit = outcome.exit;
      if (outcome.exit === 0) {
        releasePlanOutput();
        emit("Normal", "StepSucceeded", step.name, `step ${step.name} succeeded (exit 0) in ${outcome.seconds}s`);
        emit("Normal", "PlanSummary", step.name, "plan: no changes");
        if (options.op === "drift") result.drift = noDrift();
        if (options.op === "plan") result.plan = emptyPlanSummary();
        if (checked) {
          // Nothing to apply: the checked apply ends here, having changed nothing.
          log.info("the plan has no changes; skipping the apply step");
          result.changes = { add: 0, change: 0, destroy: 0 };
          return finish(undefined);
        }
        continue;
      }
    }

    if (step.name === "show-json") {
      let plan: PlanDocument;
      try {
        plan = parsePlanDocument(outcome.stdout);
      } catch (error) {
        releasePlanOutput();
        const summary = (error as Error).message;
        emit("Warning", "StepFailed", step.name, `step ${step.name} failed: ${summary}`);
        return finish({ kind: "step", step: step.name, summary });
      }
      addSecrets(planSecrets(planSensitiveValues(plan)));
      releasePlanOutput();
      emit("Normal", "StepSucceeded", step.name, `step ${step.name} succeeded (exit 0) in ${outcome.seconds}s`);
      const stop = judgePlan(plan);
      if (stop) return finish(stop);
      continue;
    }

    if (step.name === "state-list") {
      const managed = countManagedAddresses(outcome.stdout);
      log.info("the restored state lists managed resource instances", { count: managed });
      if (managed === 0 && options.restoreResources > 0) {
        const summary = `the restored state lists no managed resources, but the backup has ${options.restoreResources}`;
        emit("Warning", "StepFailed", step.name, `step ${step.name} failed: ${summary}`);
        return finish({ kind: "step", step: step.name, summary });
      }
    }

    emit("Normal", "StepSucceeded", step.name, `step ${step.name} succeeded (exit ${outcome.exit}) in ${outcome.seconds}s`);
    if ((step.name === "apply" || step.name === "destroy") && result.changes) {
      const { add, change, destroy } = result.changes;
      emit(
        "Normal",
        "ResourcesChanged",
        step.name,
        `${step.name} changed resources: ${add} added, ${change} changed, ${destroy} destroyed, ${result.changes.import ?? 0} imported`,
      );
    }
  }
  return finish(undefined);

  /** Runs one step with its output redacted on the way out; records the changes an apply or destroy reports. */
  async function execute(step: StepInvocation): Promise<StepOutcome> {
    const stdout = new RedactingLineWriter(io.stdout, currentRedactor);
    const stderr = new RedactingLineWriter(io.stderr, currentRedactor);
    const scanner = step.name === "apply" || step.name === "destroy" ? new ChangesScanner() : undefined;
    const passThrough = step.stdout === "log" || step.stdout === "capture-and-log";
    const outcome = await runStep({
      command: [...options.bin, ...step.args],
      cwd: prepared.rootDir,
      env: prepared.env,
      captureStdout: step.stdout !== "log" && step.stdout !== "hold-for-plan",
      onStdout: (text) => {
        scanner?.write(text);
        if (passThrough) stdout.write(text);
        else if (step.stdout === "hold-for-plan") heldPlanOutput += text;
      },
      onStderr: (text) => stderr.write(text),
      signal: io.signal,
      stopTimeoutMs: options.stopTimeoutMs,
    });
    stdout.flush();
    stderr.flush();
    const changes: Changes | undefined = scanner?.changes();
    if (changes) result.changes = changes;
    return outcome;
  }

  /** After show-json: fill the result, and stop a checked apply whose plan is not approved. */
  function judgePlan(plan: PlanDocument): Stop | undefined {
    if (options.op === "drift") {
      result.drift = summarizeDrift(plan);
      const { add, change, destroy } = result.drift;
      emit("Normal", "PlanSummary", "show-json", `plan: ${planCounts({ add, change, destroy })}`);
      return undefined;
    }
    const summary: PlanSummary = summarizePlan(plan);
    emit("Normal", "PlanSummary", "show-json", `plan: ${planCounts(summary)}`);
    log.info("plan computed", {
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
      log.info("applying an approved plan that deletes or replaces resources", {
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
  async function pushErroredState(workspace: PreparedWorkspace): Promise<"none" | "pushed" | "failed"> {
    if (!existsSync(join(workspace.rootDir, erroredStateFile))) return "none";
    // tofu wrote it encrypted, and state push reads it as plain: decrypted first.
    if (options.stateEncryption) {
      const file = join(workspace.rootDir, erroredStateFile);
      const decrypted = await decryptIfEncrypted({ ...options, prepared: workspace, file, signal: io.signal, redact }).catch(
        (error: unknown) => (error as Error).message,
      );
      if (typeof decrypted === "string") {
        log.error("errored.tfstate is encrypted and could not be decrypted: the new state is lost with this Job's work directory", {
          reason: decrypted,
        });
        return "failed";
      }
    }
    const step = erroredStatePushStep(lockTimeoutSeconds);
    log.info("pushing the state the failed step could not save", { file: erroredStateFile });
    const outcome = await execute(step);
    result.steps.push({ name: step.name, exit: outcome.exit, seconds: outcome.seconds });
    if (!failed(step, outcome)) return "pushed";
    log.error("pushing errored.tfstate failed: the new state is lost with this Job's work directory", { exit: outcome.exit });
    return "failed";
  }
}

function failed(step: StepInvocation, outcome: StepOutcome): boolean {
  if (outcome.failure) return true;
  if (step.okExits.includes(outcome.exit)) return false;
  return !step.okIfStderr.some((message) => outcome.stderrTail.includes(message));
}
