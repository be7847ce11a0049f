// What a finished Job adds to the captf_* metrics, from the Job and Pod as Kubernetes leaves them and the documents the
// runner and its state broker write as termination messages: read by observeJobs, recorded by bookkeepFinishedJobs and
// observeDrift into a real CaptfMetrics (the resource changes and plan approvals as reconcileWorkspace counts what
// resourceChanges and bookkeepPlans return), read back by exposed name.
import { describe, expect, it } from "@jest/globals";
import type { BrokerSummary, RunResult } from "@captf/contract/run-result";
import { labels } from "@captf/contract/api";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { machineAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue, seriesValues } from "../metrics/series.test-support.js";
import { apiError, fakeClient } from "../runtime/fake-client.test-support.js";
import { observeJobs } from "./observe-jobs.js";
import { bookkeepPlans } from "./plan-approval.js";
import { resourceChanges } from "./transition-events.js";
import { phasePass, passNamespace, passOwner } from "./phase-pass.test-support.js";
import { bookkeepFinishedJobs, observeDrift } from "./workspace-phases.js";

const namespace = passNamespace;
const owner = passOwner;
const startedAt = "2026-12-07T10:00:00Z";
const finishedAt = "2026-12-07T10:05:00Z";

interface FinishedJob {
  op: "apply" | "destroy" | "plan" | "drift" | "refresh" | "restore";
  /** The Job's finished condition: Complete, or Failed with this reason. */
  finished: "Complete" | "BackoffLimitExceeded" | "DeadlineExceeded";
  /** The runner's result document; none: it wrote none. */
  result?: Partial<RunResult>;
  /** The state broker's summary (its init container's termination message). */
  broker?: BrokerSummary;
  /** The Pod was deleted from outside (no Pod left). */
  podGone?: boolean;
}

const runnerResult = (op: FinishedJob["op"], result: Partial<RunResult>): RunResult => ({
  version: 1,
  op,
  image: { ref: "registry.example/m:v1", providersMirror: false },
  runtime: { command: ["tofu"], version: "1.12.0" },
  steps: [],
  drift: null,
  error: null,
  ...result,
});

function jobAndPod(name: string, spec: FinishedJob): { job: V1Job; pod?: V1Pod } {
  const job: V1Job = {
    metadata: {
      name,
      namespace,
      uid: `uid-${name}`,
      labels: { [labels.ownerKind]: owner.kind, [labels.ownerName]: owner.name, [labels.op]: spec.op, [labels.attempt]: "1" },
      ownerReferences: [{ apiVersion: "v1", kind: owner.kind, name: owner.name, uid: owner.uid, controller: true }],
    },
    status: {
      startTime: new Date(startedAt),
      ...(spec.finished === "Complete" ? { completionTime: new Date(finishedAt) } : {}),
      conditions: [
        spec.finished === "Complete"
          ? { type: "Complete", status: "True", lastTransitionTime: new Date(finishedAt) }
          : { type: "Failed", status: "True", reason: spec.finished, lastTransitionTime: new Date(finishedAt) },
      ],
    },
  };
  if (spec.podGone) return { job };
  const terminated = (message: string | undefined) => ({
    terminated: { exitCode: spec.finished === "Complete" ? 0 : 1, ...(message ? { message } : {}) },
  });
  const pod: V1Pod = {
    metadata: { name: `${name}-pod`, namespace, labels: { "job-name": name } },
    status: {
      phase: spec.finished === "Complete" ? "Succeeded" : "Failed",
      initContainerStatuses: spec.broker
        ? [{ name: "broker", image: "captf", imageID: "", ready: false, restartCount: 0, state: terminated(JSON.stringify(spec.broker)) }]
        : [],
      containerStatuses: [
        {
          name: "source",
          image: "registry.example/m:v1",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: terminated(spec.result ? JSON.stringify(runnerResult(spec.op, spec.result)) : undefined),
        },
      ],
    },
  };
  return { job, pod };
}

/** The Jobs and Pods an API server holds, and the calls bookkeeping makes on it (the run Secret, the run lease). */
function cluster(finished: { job: V1Job; pod?: V1Pod }[]) {
  return fakeClient({
    "list jobs": () => ({ items: finished.map(({ job }) => job) }),
    "list pods": (call) => ({
      items: finished.flatMap(({ pod }) =>
        pod && `job-name=${pod.metadata?.labels?.["job-name"]}` === call.query?.labelSelector ? [pod] : [],
      ),
    }),
    "delete secrets": () => ({}),
    "get leases": (call) => Promise.reject(apiError(404, `leases "${call.name}" not found`, "NotFound")),
  });
}

/** One reconcile pass's records of these finished Jobs, as reconcileWorkspace makes them; the registry they went to. */
async function recordFinished(finished: FinishedJob[]): Promise<Registry> {
  const registry = new Registry();
  const metrics = new CaptfMetrics(registry);
  const client = cluster(finished.map((spec, index) => jobAndPod(`m-${spec.op}-${index}`, spec)));
  const pass = phasePass(client, metrics, { now: Date.parse(finishedAt) });
  const jobs = await observeJobs({ client }, namespace, owner, Date.parse(finishedAt));
  const toMark = await bookkeepFinishedJobs(pass, jobs);
  observeDrift(pass, jobs, toMark, undefined);
  // reconcileWorkspace counts each bookkept Job's changes as resourceChanges reads them, and the approvals bookkeepPlans found.
  for (const job of toMark)
    for (const { action, count } of resourceChanges(job.result?.changes))
      metrics.resourcesChanged.inc({ kind: machineAdapter.kind, op: job.op, action }, count);
  for (const result of bookkeepPlans(toMark).approvals) metrics.planApprovals.inc({ kind: machineAdapter.kind, result });
  return registry;
}

const stepFailed = (step: string): Partial<RunResult> =>
  ({ error: { kind: "step", step, summary: `${step} failed` } }) as unknown as Partial<RunResult>;
const errorOf = (kind: string, step: string | null = null): Partial<RunResult> =>
  ({ error: { kind, step, summary: kind } }) as unknown as Partial<RunResult>;

describe("the metrics of a finished Job", () => {
  it.each<[string, FinishedJob, [metric: string, labels: Record<string, string>][]]>([
    [
      "a Job its deadline stopped counts as deadline, whatever the runner reported",
      { op: "apply", finished: "DeadlineExceeded", result: errorOf("interrupted") },
      [
        ["captf_jobs_total", { op: "apply", result: "deadline" }],
        ["captf_job_duration_seconds", { op: "apply", result: "deadline" }],
        ["captf_job_errors_total", { op: "apply", error_kind: "deadline", step: "none" }],
      ],
    ],
    [
      "a run the runner reports interrupted",
      { op: "refresh", finished: "BackoffLimitExceeded", result: errorOf("interrupted", "apply-refresh-only") },
      [
        ["captf_jobs_total", { op: "refresh", result: "interrupted" }],
        ["captf_job_errors_total", { op: "refresh", error_kind: "interrupted", step: "apply-refresh-only" }],
      ],
    ],
    [
      "a Job whose Pod was deleted from outside, without a result, is interrupted",
      { op: "apply", finished: "BackoffLimitExceeded", podGone: true },
      [
        ["captf_jobs_total", { op: "apply", result: "interrupted" }],
        ["captf_job_errors_total", { op: "apply", error_kind: "interrupted", step: "none" }],
      ],
    ],
    [
      "an apply the destructive-plan guard stopped is blocked",
      { op: "apply", finished: "BackoffLimitExceeded", result: errorOf("blocked") },
      [
        ["captf_jobs_total", { op: "apply", result: "blocked" }],
        ["captf_job_errors_total", { op: "apply", error_kind: "blocked", step: "none" }],
      ],
    ],
    [
      "an apply whose plan changed from the approved one",
      { op: "apply", finished: "BackoffLimitExceeded", result: errorOf("plan-changed") },
      [
        ["captf_jobs_total", { op: "apply", result: "plan_changed" }],
        ["captf_job_errors_total", { op: "apply", error_kind: "plan-changed", step: "none" }],
      ],
    ],
    [
      "a destroy whose new state was not saved counts as failed, its error state-save in the destroy step",
      { op: "destroy", finished: "BackoffLimitExceeded", result: errorOf("state-save", "destroy") },
      [
        ["captf_jobs_total", { op: "destroy", result: "failed" }],
        ["captf_job_errors_total", { op: "destroy", error_kind: "state-save", step: "destroy" }],
      ],
    ],
    [
      "an image the runner cannot run fails as image-layout before any step",
      { op: "apply", finished: "BackoffLimitExceeded", result: errorOf("image-layout") },
      [
        ["captf_jobs_total", { op: "apply", result: "failed" }],
        ["captf_job_errors_total", { op: "apply", error_kind: "image-layout", step: "none" }],
      ],
    ],
    [
      "a failed Job whose kept Pod holds no result fails with an unknown error",
      { op: "plan", finished: "BackoffLimitExceeded" },
      [
        ["captf_jobs_total", { op: "plan", result: "failed" }],
        ["captf_job_errors_total", { op: "plan", error_kind: "unknown", step: "none" }],
      ],
    ],
    [
      "a run that failed preparing its root names prepare",
      { op: "apply", finished: "BackoffLimitExceeded", result: stepFailed("prepare") },
      [["captf_job_errors_total", { op: "apply", error_kind: "step", step: "prepare" }]],
    ],
    [
      "a failure point the metrics do not list (the runner's flags) is other",
      { op: "apply", finished: "BackoffLimitExceeded", result: stepFailed("flags") },
      [["captf_job_errors_total", { op: "apply", error_kind: "step", step: "other" }]],
    ],
    [
      "a restore whose state push failed names state-push, and counts a failed restore",
      { op: "restore", finished: "BackoffLimitExceeded", result: stepFailed("state-push") },
      [
        ["captf_jobs_total", { op: "restore", result: "failed" }],
        ["captf_job_errors_total", { op: "restore", error_kind: "step", step: "state-push" }],
        ["captf_state_restores_total", { result: "failed" }],
      ],
    ],
  ])("%s", async (_what, finished, series) => {
    const registry = await recordFinished([finished]);
    for (const [metric, labels] of series)
      expect([metric, labels, await seriesValue(registry, metric, labels, part(metric))]).toEqual([metric, labels, 1]);
    // One error per failed Job, under the labels above.
    expect(await seriesValue(registry, "captf_job_errors_total")).toBe(1);
  });

  it.each(["init", "force-unlock", "validate", "show-json", "state-list"])("a step %s that failed is the error's step", async (step) => {
    const registry = await recordFinished([{ op: "apply", finished: "BackoffLimitExceeded", result: stepFailed(step) }]);
    expect(await seriesValue(registry, "captf_job_errors_total", { op: "apply", error_kind: "step", step })).toBe(1);
  });

  it("times each step the runner reports under its name", async () => {
    const steps = [
      { name: "init", exit: 0, seconds: 3 },
      { name: "force-unlock", exit: 0, seconds: 1 },
      { name: "validate", exit: 0, seconds: 1 },
      { name: "plan", exit: 0, seconds: 4 },
      { name: "show-json", exit: 0, seconds: 1 },
      { name: "apply", exit: 0, seconds: 20 },
      { name: "apply-refresh-only", exit: 0, seconds: 5 },
      { name: "destroy", exit: 0, seconds: 7 },
      { name: "state-push", exit: 0, seconds: 1 },
      { name: "state-list", exit: 0, seconds: 1 },
    ];
    const registry = await recordFinished([{ op: "destroy", finished: "Complete", result: { steps } }]);
    const timed = [
      { step: "init", value: 3 },
      { step: "force-unlock", value: 1 },
      { step: "validate", value: 1 },
      { step: "plan", value: 4 },
      { step: "show-json", value: 1 },
      { step: "apply", value: 20 },
      { step: "apply-refresh-only", value: 5 },
      { step: "destroy", value: 7 },
      { step: "state-push", value: 1 },
      { step: "state-list", value: 1 },
    ];
    expect(await seriesValues(registry, "captf_job_step_duration_seconds", { op: "destroy" }, timed, "sum")).toEqual(timed);
    expect(await seriesValue(registry, "captf_jobs_total", { op: "destroy", result: "succeeded" })).toBe(1);
  });

  it("counts the requests of module code the state broker refused, by what they were aimed at", async () => {
    const broker: BrokerSummary = {
      requests: 9,
      allowed: 4,
      refused: 5,
      refusedByTarget: { state: 2, lock: 1, event: 1, other: 1 },
      refusals: [],
    };
    const registry = await recordFinished([{ op: "apply", finished: "Complete", result: {}, broker }]);
    const refused = [
      { target: "state", value: 2 },
      { target: "lock", value: 1 },
      { target: "event", value: 1 },
      { target: "other", value: 1 },
    ];
    expect(await seriesValues(registry, "captf_broker_refused_requests_total", { kind: "TerraformMachine" }, refused)).toEqual(refused);
  });

  it("counts what an apply changed and what a drift check found drifted, by action", async () => {
    const registry = await recordFinished([
      { op: "apply", finished: "Complete", result: { changes: { add: 1, change: 2, destroy: 3, import: 4 } } },
      {
        op: "drift",
        finished: "Complete",
        result: { drift: { detected: true, add: 5, change: 6, destroy: 7, resources: ["a.b"] } },
      },
    ]);
    const changed = [
      { action: "add", value: 1 },
      { action: "change", value: 2 },
      { action: "destroy", value: 3 },
      { action: "import", value: 4 },
    ];
    expect(await seriesValues(registry, "captf_resources_changed_total", { op: "apply" }, changed)).toEqual(changed);
    const drifted = [
      { action: "add", value: 5 },
      { action: "change", value: 6 },
      { action: "destroy", value: 7 },
    ];
    expect(await seriesValues(registry, "captf_drift_resources_total", {}, drifted)).toEqual(drifted);
  });

  it("counts a plan shown for approval as created, and an apply that planned other than approved as changed", async () => {
    const plan = { hash: "p1:abc", add: 1, change: 0, destroy: 0, resources: ["a.b (create)"], truncated: false };
    const planned = await recordFinished([{ op: "plan", finished: "Complete", result: { plan } }]);
    const replanned = await recordFinished([
      { op: "apply", finished: "BackoffLimitExceeded", result: { ...errorOf("plan-changed"), plan: { ...plan, hash: "p1:def" } } },
    ]);
    const shown = { kind: "TerraformMachine", result: "created" };
    const changedPlan = { kind: "TerraformMachine", result: "changed" };
    expect([
      await seriesValue(planned, "captf_plan_approvals_total", shown),
      await seriesValue(replanned, "captf_plan_approvals_total", changedPlan),
    ]).toEqual([1, 1]);
    expect([await seriesValue(planned, "captf_plan_approvals_total"), await seriesValue(replanned, "captf_plan_approvals_total")]).toEqual([
      1, 1,
    ]);
  });
});

/** A histogram's series are read by their count. */
function part(metric: string): "count" | undefined {
  return metric.endsWith("_seconds") ? "count" : undefined;
}
