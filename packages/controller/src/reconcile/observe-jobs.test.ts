import { describe, expect, it } from "@jest/globals";
import type { RunResult } from "@captf/contract/run-result";
import { outcomeOf } from "./observe-jobs.js";

const failedJob = (reason = "BackoffLimitExceeded", annotations: Record<string, string> = {}) => ({ metadata: { annotations }, status: { conditions: [{ type: "Failed", status: "True", reason }] } });
const stepFailure = { steps: [], error: { kind: "step", step: "apply", summary: "boom" } } as unknown as RunResult;
const interrupted = { steps: [], error: { kind: "interrupted", summary: "terminated" } } as unknown as RunResult;
const keptPod = { metadata: {}, status: { phase: "Failed" } };

describe("outcomeOf", () => {
  it("a complete Job succeeded", () => {
    expect(outcomeOf({ metadata: {}, status: { conditions: [{ type: "Complete", status: "True" }] } }, undefined, keptPod)).toBe("succeeded");
  });
  it("a failed step is a failure; the runner's own interruption is an interruption", () => {
    expect(outcomeOf(failedJob(), stepFailure, keptPod)).toBe("failed");
    expect(outcomeOf(failedJob(), interrupted, keptPod)).toBe("interrupted");
  });
  it("a failed Job whose Pod is gone, deleting or disrupted was stopped from outside: an interruption, retried without backoff", () => {
    expect(outcomeOf(failedJob(), undefined, undefined)).toBe("interrupted");
    expect(outcomeOf(failedJob(), undefined, { metadata: { deletionTimestamp: new Date() }, status: {} })).toBe("interrupted");
    expect(outcomeOf(failedJob(), undefined, { metadata: {}, status: { conditions: [{ type: "DisruptionTarget", status: "True" }] } })).toBe("interrupted");
  });
  it("a failed Job whose Pod is kept without a result failed (for example a crash before the runner wrote one)", () => {
    expect(outcomeOf(failedJob(), undefined, keptPod)).toBe("failed");
  });
  it("a deadline kill and an image not pulled in time are failures even without their Pod", () => {
    expect(outcomeOf(failedJob("DeadlineExceeded"), interrupted, undefined)).toBe("failed");
    expect(outcomeOf(failedJob("BackoffLimitExceeded", { "captf.io/image-pull-failed": "true" }), undefined, undefined)).toBe("failed");
  });
});
