import { describe, expect, it } from "@jest/globals";
import { newStateReadError } from "./state-read-errors.js";

describe("newStateReadError", () => {
  it("counts the transition into an unreadable state once, by the metric's reason", () => {
    expect(newStateReadError("StateRead", "StateCorrupt")).toBe("corrupt");
    expect(newStateReadError(undefined, "StateInconsistent")).toBe("inconsistent");
    expect(newStateReadError("StateRead", "StateEncrypted")).toBe("encrypted");
    expect(newStateReadError("StateNotFound", "StateLost")).toBe("lost");
    expect(newStateReadError("StateRead", "StateLocked")).toBe("locked");
    expect(newStateReadError("StateRead", "StateTooLarge")).toBe("corrupt");
    expect(newStateReadError("StateRead", "StateLineageChanged")).toBe("inconsistent");
  });

  it("does not count a pass that still finds the same failure, nor a readable or held state", () => {
    expect(newStateReadError("StateCorrupt", "StateCorrupt")).toBeUndefined();
    expect(newStateReadError("StateLocked", "StateLocked")).toBeUndefined();
    expect(newStateReadError("StateCorrupt", "StateRead")).toBeUndefined();
    expect(newStateReadError("StateRead", undefined)).toBeUndefined();
    expect(newStateReadError("StateRead", "RetainedStateFound")).toBeUndefined();
    expect(newStateReadError("StateRead", "StateNotFound")).toBeUndefined();
  });

  it("counts a change from one failure to another", () => {
    expect(newStateReadError("StateCorrupt", "StateLost")).toBe("lost");
  });
});
