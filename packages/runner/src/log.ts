import type { Redactor } from "./redact.js";

export type LogFields = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** One JSON object a line on the runner's stderr, redacted like everything else it prints. */
export function createLogger(write: (text: string) => void, redact: () => Redactor): Logger {
  const line = (level: string, message: string, fields: LogFields = {}) =>
    write(redact()(JSON.stringify({ ts: new Date().toISOString(), level, logger: "runner", msg: message, ...fields })) + "\n");
  return {
    info: (message, fields) => line("info", message, fields),
    error: (message, fields) => line("error", message, fields),
  };
}
