import { readFileSync } from "node:fs";

/** Thrown for a duration flag that is not a Go-style duration. */
export class DurationSyntaxError extends Error {
  constructor(readonly text: string) {
    super(`"${text}" is not a duration: write a number with a unit, for example 300s, 5m0s, 1m30s or 1h (units ns, us, ms, s, m, h)`);
    this.name = "DurationSyntaxError";
  }
}

const unitMilliseconds: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go `time.Duration` string ("5m0s", "300s", "1.5h", "0") into milliseconds: the
 * form the manager writes into Job arguments, so both sides read the same flag the same way.
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (trimmed === "0") return 0;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = part.exec(trimmed); match; match = part.exec(trimmed)) {
    total += Number(match[1]) * unitMilliseconds[match[2]!]!;
    consumed = part.lastIndex;
  }
  if (consumed === 0 || consumed !== trimmed.length) throw new DurationSyntaxError(text);
  return total;
}

/** Milliseconds on a monotonic clock: process.hrtime, since node:perf_hooks costs a run's start a dozen more built-in modules. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Whole seconds of a duration, as OpenTofu's `-lock-timeout=<n>s` takes them. */
export function wholeSeconds(milliseconds: number): number {
  return Math.floor(milliseconds / 1000);
}

/**
 * CPU seconds (user + system) of this process's children that have ended and been waited for, from
 * /proc/self/stat's cutime and cstime: the difference across a step is what its runtime command (and the
 * providers it started) used. Undefined where /proc is not Linux's.
 */
export function endedChildrenCpuSeconds(stat = readProcSelfStat()): number | undefined {
  if (stat === undefined) return undefined;
  // After the command name, which may hold spaces and parentheses: state is field 3, cutime 16, cstime 17.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[13]) + Number(fields[14]);
  // USER_HZ is 100 on every Linux architecture the runner ships for.
  return Number.isFinite(ticks) ? ticks / 100 : undefined;
}

function readProcSelfStat(): string | undefined {
  try {
    return readFileSync("/proc/self/stat", "utf8");
  } catch {
    return undefined;
  }
}

/** This process's own CPU seconds (user + system) so far. */
export function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}
