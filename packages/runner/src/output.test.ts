import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { standardStreamWriter } from "./output.js";

/** A stream that keeps what it is given, and counts how often it was asked for. */
function keepingStream() {
  const written: string[] = [];
  let asked = 0;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString("utf8"));
      done();
    },
  });
  return { written, asked: () => asked, stream: () => (asked++, stream) };
}

describe("the runner's stdout and stderr writer", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "runner-output-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes each text to the descriptor, in order, whole, without asking for the process's stream", () => {
    const path = join(dir, "out");
    const fd = openSync(path, "w");
    const kept = keepingStream();
    const write = standardStreamWriter({ fd, stream: kept.stream });
    write('{"msg":"step started"}\n');
    write("Résumé: ünïcode ✓\n");
    write("x".repeat(200_000));
    closeSync(fd);
    expect(readFileSync(path, "utf8")).toBe(`{"msg":"step started"}\nRésumé: ünïcode ✓\n${"x".repeat(200_000)}`);
    expect(kept.asked()).toBe(0);
  });

  it("hands a refused write and every later one to the process's stream", () => {
    const path = join(dir, "read-only");
    closeSync(openSync(path, "w"));
    // Opened for reading: every write to it fails (EBADF), as one to a closed or full non-blocking pipe would.
    const fd = openSync(path, "r");
    const kept = keepingStream();
    const write = standardStreamWriter({ fd, stream: kept.stream });
    write("first\n");
    write("second\n");
    closeSync(fd);
    expect(kept.written).toEqual(["first\n", "second\n"]);
    expect(kept.asked()).toBe(1);
  });
});
