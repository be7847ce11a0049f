import { writeSync } from "node:fs";

/** Where a standard stream's text goes: its file descriptor, and the process's stream for what the descriptor refuses. */
export interface StandardStream {
  fd: number;
  stream: () => NodeJS.WritableStream;
}

/**
 * Writes the runner's stdout or stderr straight to the file descriptor. `process.stdout` and
 * `process.stderr` would first set up a socket over the pipe a container's output goes to (about a
 * millisecond before every Job's first step), and both write pipes and files synchronously on
 * Linux anyway. A descriptor that refuses a write (non-blocking and full, or closed) hands that
 * text and everything after it to the process's stream, which waits or reports as it always has.
 */
export function standardStreamWriter({ fd, stream }: StandardStream): (text: string) => void {
  let fallback: NodeJS.WritableStream | undefined;
  return (text) => {
    if (fallback) {
      fallback.write(text);
      return;
    }
    let rest = Buffer.from(text, "utf8");
    try {
      while (rest.length > 0) rest = rest.subarray(writeSync(fd, rest));
    } catch {
      fallback = stream();
      fallback.write(rest);
    }
  };
}
