// The streams a command writes to, the exit codes, and the errors a user can meet.
import type { CliIo } from "tfcapi-lint";

export type { CliIo };

export const exitCodes = {
  ok: 0,
  /** The command ran and failed: a refused directory, a failed build. */
  failed: 1,
  /** Bad arguments or flags. */
  usage: 3,
} as const;

/** A usage error: printed with a pointer to --help, exit 3. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** A failure the user can fix: printed as it is (it names what and how), exit 1. */
export class CommandError extends Error {
  override readonly name = "CommandError";
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const outputFormats = ["text", "json"] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** Writes a command's report: JSON (two-space indented, one document) or its text lines. */
export function report(io: CliIo, format: OutputFormat, document: object, text: string): void {
  io.stdout.write(format === "json" ? `${JSON.stringify(document, null, 2)}\n` : text);
}
