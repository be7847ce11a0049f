import { join } from "node:path";

import { type Operation, type StepName } from "@captf/contract/run-result";

/** The tfvars file of the generated root, relative to the root (the steps' working directory). */
export const tfvarsFile = "terraform.tfvars.json";
/** Under the work directory: the saved plan of a guarded or approved apply. */
export const applyPlanFile = "apply.tfplan";
/** Under the work directory: the saved plan of a plan or drift run. */
export const reviewPlanFile = "plan.tfplan";
/** Under the work directory: the decompressed backup a restore pushes. */
export const restoreStateFile = "restore.tfstate";
/** In the root: the state OpenTofu leaves behind when it could not write the backend. */
export const erroredStateFile = "errored.tfstate";

/** What happens to a step's standard output. */
export type StdoutHandling =
  /** passed through to the runner's stdout, redacted */
  | "log"
  /** kept in memory only (`show -json` carries every input value) */
  | "capture"
  /** kept in memory and passed through (validate diagnostics, state addresses) */
  | "capture-and-log"
  /** held back until the plan's own sensitive values are known, then passed through */
  | "hold-for-plan";

export interface StepInvocation {
  name: StepName;
  /** Arguments after the runtime command (`--bin`). */
  args: string[];
  /** Exit codes that are not a failure. */
  okExits: number[];
  /** Messages whose presence in stderr makes a failing exit acceptable. */
  okIfStderr: string[];
  stdout: StdoutHandling;
}

export interface StepOptions {
  workdir: string;
  backendConfig: readonly string[];
  lockTimeoutSeconds: number;
  forceUnlockId?: string | undefined;
  guardDeletes: boolean;
  expectPlan?: string | undefined;
}

function step(name: StepName, args: string[], extra: Partial<StepInvocation> = {}): StepInvocation {
  return { name, args, okExits: [0], okIfStderr: [], stdout: "log", ...extra };
}

/** An apply that plans to a file and checks the plan before applying it. */
export function checksPlanBeforeApply(op: Operation, options: Pick<StepOptions, "guardDeletes" | "expectPlan">): boolean {
  return op === "apply" && (options.guardDeletes || Boolean(options.expectPlan));
}

/**
 * The runtime steps of one operation, in order. `show-json` runs only when the plan before it
 * exited 2 (it has changes); the caller decides that, and whether the apply after a checked plan
 * runs at all.
 */
export function stepsFor(op: Operation, options: StepOptions): StepInvocation[] {
  const common = ["-input=false", "-no-color", `-lock-timeout=${options.lockTimeoutSeconds}s`];
  const varFile = `-var-file=${tfvarsFile}`;
  const steps = [step("init", ["init", ...common, ...options.backendConfig.map((value) => `-backend-config=${value}`)])];
  if (options.forceUnlockId) {
    // force-unlock needs an initialized backend; a lock already gone (a retried pod) is fine.
    steps.push(
      step("force-unlock", ["force-unlock", "-force", options.forceUnlockId], {
        okIfStderr: ["state is already unlocked", "does not match existing lock"],
      }),
    );
  }
  const validate = step("validate", ["validate", "-json", "-no-color"], { stdout: "capture-and-log" });
  const plan = (file: string, extra: string[] = []) =>
    step("plan", ["plan", ...common, "-detailed-exitcode", ...extra, varFile, `-out=${file}`], {
      okExits: [0, 2],
      stdout: "hold-for-plan",
    });
  const show = (file: string) => step("show-json", ["show", "-json", "-no-color", file], { stdout: "capture" });
  const refreshOnly = step("apply-refresh-only", ["apply", ...common, "-refresh-only", "-auto-approve", varFile]);

  switch (op) {
    case "apply": {
      if (!checksPlanBeforeApply(op, options)) {
        return [...steps, validate, step("apply", ["apply", ...common, "-auto-approve", varFile])];
      }
      const file = join(options.workdir, applyPlanFile);
      // A saved plan carries its variables: apply takes neither -var-file nor -auto-approve.
      return [...steps, validate, plan(file), show(file), step("apply", ["apply", ...common, file])];
    }
    case "destroy":
      return [...steps, step("destroy", ["destroy", ...common, "-auto-approve", varFile])];
    case "refresh":
      return [...steps, refreshOnly];
    case "drift": {
      const file = join(options.workdir, reviewPlanFile);
      return [...steps, refreshOnly, plan(file, ["-refresh=false"]), show(file)];
    }
    case "plan": {
      const file = join(options.workdir, reviewPlanFile);
      return [...steps, validate, plan(file), show(file)];
    }
    case "restore":
      return [
        ...steps,
        step("state-push", [
          "state",
          "push",
          "-force",
          `-lock-timeout=${options.lockTimeoutSeconds}s`,
          join(options.workdir, restoreStateFile),
        ]),
        step("state-list", ["state", "list"], { stdout: "capture-and-log" }),
      ];
  }
}

/** The step that pushes `errored.tfstate` after a failed apply or destroy could not save its state. */
export function erroredStatePushStep(lockTimeoutSeconds: number): StepInvocation {
  return step("state-push", ["state", "push", `-lock-timeout=${lockTimeoutSeconds}s`, erroredStateFile]);
}
