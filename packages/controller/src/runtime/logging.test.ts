import { describe, expect, it } from "@jest/globals";
import { KubeApiError } from "./api-errors.js";
import { createLogger, formatTextLine } from "./logging.js";

function sink() {
  const lines: string[] = [];
  return { lines, write: (text: string) => void lines.push(text) };
}

describe("the manager's logger", () => {
  it("writes one JSON object per line in json format, with no pid or hostname", () => {
    const out = sink();
    const logger = createLogger({ level: "info", format: "json", stdout: out });
    logger.child({ controller: "terraformmachine" }).info({ key: "ns/a" }, "reconciled");
    logger.debug("hidden");
    expect(out.lines).toHaveLength(1);
    expect(JSON.parse(out.lines[0]!)).toEqual({
      level: 30,
      time: expect.any(Number),
      controller: "terraformmachine",
      key: "ns/a",
      msg: "reconciled",
    });
  });

  it("writes readable lines in text format", () => {
    const out = sink();
    createLogger({ level: "debug", format: "text", stdout: out }).debug({ key: "ns/a", count: 2, note: "two words" }, "requeued");
    expect(out.lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z DEBUG "requeued" key=ns\/a count=2 note="two words"\n$/);
  });

  it("formats errors by their message", () => {
    expect(formatTextLine({ level: 50, time: 0, msg: "failed", err: { type: "Error", message: "boom", stack: "…" } })).toBe(
      '1970-01-01T00:00:00.000Z ERROR "failed" err="boom"\n',
    );
  });

  it("logs an API error as its request, HTTP status and the server's message", () => {
    const status = {
      kind: "Status" as const,
      status: "Failure",
      message: 'terraformmachines "m-1" not found',
      reason: "NotFound",
      code: 404,
    };
    const out = sink();
    createLogger({ level: "info", format: "text", stdout: out }).error(
      { err: new KubeApiError(404, status, 'PATCH /apis/x: 404 terraformmachines "m-1" not found') },
      "reconciler error",
    );
    expect(out.lines[0]).toContain("err=");
    expect(out.lines[0]).toContain("PATCH /apis/x: 404");
    expect(out.lines[0]).toContain('m-1\\" not found');
  });

  it("splits warnings and errors to stderr when asked", () => {
    const [out, err] = [sink(), sink()];
    const logger = createLogger({ level: "info", format: "json", splitStream: true, stdout: out, stderr: err });
    logger.info("fine");
    logger.warn("careful");
    logger.error("broken");
    expect(out.lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(["fine"]);
    expect(err.lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(["careful", "broken"]);
  });
});
