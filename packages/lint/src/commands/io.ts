// The streams and settings a command runs with: the real process in the binary, buffers in tests.

export interface OutputStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  /** Relative paths are resolved against it; defaults to the process's working directory. */
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The exit codes of the public reference. */
export const exitCodes = {
  ok: 0,
  /** An error finding, or a warning under --strict. */
  findings: 1,
  /** A module that does not parse, an image or file that cannot be read. */
  unreadable: 2,
  /** Bad arguments, flags, role, contract or reference. */
  usage: 3,
} as const;

/** A usage error: the CLI prints it with a pointer to --help and exits 3. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
