import { describe, expect, it } from "@jest/globals";
import { checksPlanBeforeApply, stepsFor, type StepOptions } from "./steps.js";
import { isOperation, type Operation } from "@captf/contract/run-result";

const options: StepOptions = {
  workdir: "/captf/work",
  backendConfig: ["in_cluster_config=true", "namespace=team-a"],
  lockTimeoutSeconds: 300,
  guardDeletes: false,
};
const common = ["-input=false", "-no-color", "-lock-timeout=300s"];

function names(op: Operation, extra: Partial<StepOptions> = {}): string[] {
  return stepsFor(op, { ...options, ...extra }).map((step) => step.name);
}

describe("stepsFor", () => {
  it.each<[Operation, Partial<StepOptions>, string[]]>([
    ["apply", {}, ["init", "validate", "apply"]],
    ["apply", { guardDeletes: true }, ["init", "validate", "plan", "show-json", "apply"]],
    ["apply", { expectPlan: "p1:abc" }, ["init", "validate", "plan", "show-json", "apply"]],
    ["destroy", { guardDeletes: true }, ["init", "destroy"]],
    ["plan", {}, ["init", "validate", "plan", "show-json"]],
    ["drift", {}, ["init", "apply-refresh-only", "plan", "show-json"]],
    ["refresh", {}, ["init", "apply-refresh-only"]],
    ["restore", {}, ["init", "state-push", "state-list"]],
    ["destroy", { forceUnlockId: "lock-1" }, ["init", "force-unlock", "destroy"]],
  ])("runs %s with %j as %j", (op, extra, expected) => {
    expect(names(op, extra)).toEqual(expected);
  });

  it("passes every --backend-config to init and the lock timeout to every locking step", () => {
    const [init, , apply] = stepsFor("apply", options);
    expect(init!.args).toEqual(["init", ...common, "-backend-config=in_cluster_config=true", "-backend-config=namespace=team-a"]);
    expect(apply!.args).toEqual(["apply", ...common, "-auto-approve", "-var-file=terraform.tfvars.json"]);
  });

  it("plans a checked apply to a file under the work directory and applies exactly that file", () => {
    const steps = stepsFor("apply", { ...options, guardDeletes: true });
    const plan = steps.find((step) => step.name === "plan")!;
    expect(plan.args).toEqual([
      "plan",
      ...common,
      "-detailed-exitcode",
      "-var-file=terraform.tfvars.json",
      "-out=/captf/work/apply.tfplan",
    ]);
    expect(plan.okExits).toEqual([0, 2]);
    expect(plan.stdout).toBe("hold-for-plan");
    expect(steps.find((step) => step.name === "show-json")).toMatchObject({
      args: ["show", "-json", "-no-color", "/captf/work/apply.tfplan"],
      stdout: "capture",
    });
    expect(steps.at(-1)!.args).toEqual(["apply", ...common, "/captf/work/apply.tfplan"]);
  });

  it("plans drift without a second refresh, to its own plan file", () => {
    const plan = stepsFor("drift", options).find((step) => step.name === "plan")!;
    expect(plan.args).toContain("-refresh=false");
    expect(plan.args).toContain("-out=/captf/work/plan.tfplan");
  });

  it("tolerates a lock that is already gone when force-unlocking", () => {
    const unlock = stepsFor("apply", { ...options, forceUnlockId: "abc" })[1]!;
    expect(unlock.args).toEqual(["force-unlock", "-force", "abc"]);
    expect(unlock.okIfStderr).toEqual(["state is already unlocked", "does not match existing lock"]);
  });

  it("pushes the assembled backup by force and lists the state back for a restore", () => {
    const [, push, list] = stepsFor("restore", options);
    expect(push!.args).toEqual(["state", "push", "-force", "-lock-timeout=300s", "/captf/work/restore.tfstate"]);
    expect(list).toMatchObject({ args: ["state", "list"], stdout: "capture-and-log" });
  });

  it("checks the plan only of an apply that is guarded or approved", () => {
    expect(checksPlanBeforeApply("apply", { guardDeletes: false })).toBe(false);
    expect(checksPlanBeforeApply("apply", { guardDeletes: true })).toBe(true);
    expect(checksPlanBeforeApply("destroy", { guardDeletes: true, expectPlan: "p1:x" })).toBe(false);
    expect(isOperation("apply")).toBe(true);
    expect(isOperation("delete")).toBe(false);
  });
});
