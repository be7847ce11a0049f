import { describe, expect, it } from "@jest/globals";
import { redactor, secretsOf } from "./redact.js";
import { failureSummary } from "./summary.js";

const none = redactor([]);

describe("failureSummary", () => {
  it("heads validate's JSON error diagnostics the way the CLI does", () => {
    const stdout = JSON.stringify({
      valid: false,
      diagnostics: [
        { severity: "warning", summary: "Deprecated", detail: "old" },
        { severity: "error", summary: "Unsupported attribute", detail: 'This object does not have an attribute named "nope".\nmore' },
      ],
    });
    expect(failureSummary({ step: "validate", stdout, stderrTail: "", fallback: "x" }, none)).toBe(
      'Error: Unsupported attribute: This object does not have an attribute named "nope".',
    );
  });

  it("takes the Error: lines of stderr for other steps, colours stripped", () => {
    const stderrTail =
      "\n\x1b[31m╷\x1b[0m\n\x1b[31m│\x1b[0m \x1b[1m\x1b[31mError: \x1b[0mFailed to lock state\n│\n│ details\nError: second\n";
    expect(failureSummary({ step: "apply", stderrTail, fallback: "x" }, none)).toBe("Error: Failed to lock state\nError: second");
  });

  it("falls back to a message naming the step when the output has no diagnostic", () => {
    expect(failureSummary({ step: "init", stderrTail: "panic: oh no", fallback: "step init exited 2; see the Job's logs" }, none)).toBe(
      "step init exited 2; see the Job's logs",
    );
  });

  it("redacts before choosing lines and caps at 512 bytes after, never leaving part of a secret", () => {
    const secret = "s3cr3t-".repeat(100);
    const summary = failureSummary(
      { step: "apply", stderrTail: `Error: bad value ${secret}\n`.repeat(3) + `Error: ${"é".repeat(600)}\n`, fallback: "" },
      redactor(secretsOf([secret])),
    );
    expect(summary).not.toContain("s3cr3t");
    expect(summary.startsWith("Error: bad value (sensitive)\n")).toBe(true);
    expect(Buffer.byteLength(summary)).toBeLessThanOrEqual(512);
    expect(summary).not.toContain("\uFFFD");
  });
});
