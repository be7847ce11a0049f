/**
 * The manager's logger: pino, created once in main and passed down (never a global). `json` writes
 * pino's lines as they are; `text` turns each into one readable `time LEVEL message key=value` line.
 * With `splitStream`, warnings and errors go to stderr and the rest to stdout.
 */
import { pino, type DestinationStream, type Logger } from "pino";

export interface LoggerOptions {
  level: "trace" | "debug" | "info" | "warn" | "error" | "silent";
  format: "text" | "json";
  splitStream?: boolean;
  /** Default process.stdout / process.stderr. */
  stdout?: { write(text: string): unknown };
  stderr?: { write(text: string): unknown };
}

const levelNames: Readonly<Record<number, string>> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
const omitted = new Set(["level", "time", "msg", "pid", "hostname"]);

/** One pino record as a text line: `2026-01-02T03:04:05.678Z INFO message key=value err="…"`. */
export function formatTextLine(record: Record<string, unknown>): string {
  const time = typeof record.time === "number" ? new Date(record.time).toISOString() : String(record.time ?? "");
  const level = levelNames[Number(record.level)] ?? String(record.level);
  const fields = Object.entries(record)
    .filter(([key]) => !omitted.has(key))
    .map(([key, value]) => `${key}=${formatValue(key, value)}`);
  return [time, level, JSON.stringify(String(record.msg ?? "")), ...fields].join(" ") + "\n";
}

function formatValue(key: string, value: unknown): string {
  if (key === "err" && value && typeof value === "object") return JSON.stringify(String((value as { message?: unknown }).message ?? ""));
  if (typeof value === "string") return /^[\w./:@-]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value);
}

/** A destination that rewrites each JSON line as text. */
function textDestination(target: { write(text: string): unknown }): DestinationStream {
  return {
    write(line: string) {
      try {
        target.write(formatTextLine(JSON.parse(line) as Record<string, unknown>));
      } catch {
        target.write(line);
      }
    },
  };
}

export function createLogger(options: LoggerOptions): Logger {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const wrap = (target: { write(text: string): unknown }): DestinationStream =>
    options.format === "text" ? textDestination(target) : { write: (line: string) => void target.write(line) };
  const base = {
    level: options.level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.epochTime,
    serializers: { err: pino.stdSerializers.err },
  };
  const out = wrap(stdout);
  if (!options.splitStream) return pino(base, out);
  return pino(
    base,
    pino.multistream(
      [
        { level: "trace", stream: { write: (line: string) => (isWarnOrWorse(line) ? undefined : out.write(line)) } },
        { level: "warn", stream: wrap(stderr) },
      ],
      { dedupe: false },
    ),
  );
}

function isWarnOrWorse(line: string): boolean {
  const level = /"level":(\d+)/.exec(line)?.[1];
  return Number(level) >= 40;
}
