/**
 * Which declared names (condition reasons, event reasons, annotations, labels, metrics) are produced on
 * a path some test exercises: a line of non-test source that names it ran under the test command's
 * coverage. A name only declared, or produced only on lines no test runs, is not produced.
 */

/** One declared name and how a producing line names it. */
export interface DeclaredName {
  /** `<category>:<name>`, for example `event:JobInterrupted` or `metric:captf_jobs_total`. */
  id: string;
  /** Any of these on a line makes the line name it. */
  patterns: RegExp[];
}

/** The parts of an istanbul `coverage-final.json` entry this reads. */
export interface FileCoverage {
  statementMap: Record<string, { start: { line: number }; end: { line: number } }>;
  s: Record<string, number>;
}

export interface NamesFinding {
  /** Declared, not produced on any covered line, and not reserved. */
  unproduced: string[];
  /** Reserved for later, yet produced: the table must drop them. */
  staleReservations: string[];
  /** Every produced name with one covered line that produces it (`file:line`). */
  produced: Map<string, string>;
  /** Unproduced names that some source line names anyway (on a path no test ran): the first such `file:line`. */
  namedUntested: Map<string, string>;
}

/** The text as a regular expression matching it literally. */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A name written as a string literal: `"Name"`, `'Name'` or `` `Name` ``. */
export function literalPattern(name: string): RegExp {
  return new RegExp(`["'\`]${escapeRegExp(name)}["'\`]`);
}

/** A property of a names table used in code: `annotations.inputsHash`, `labels.op`. */
export function propertyPattern(table: string, key: string): RegExp {
  return new RegExp(`\\b${escapeRegExp(table)}\\.${escapeRegExp(key)}\\b`);
}

/** A metric filled through its property: `.jobs.inc(`, `metrics?.jobQueue.observe(`, `this.ready.set(`. */
export function metricUsePattern(property: string): RegExp {
  return new RegExp(`\\.${escapeRegExp(property)}\\??\\.(inc|dec|observe|set|labels|startTimer|remove)\\(`);
}

/** The lines of a file that ran: those whose innermost statement ran at least once. */
export function coveredLines(coverage: FileCoverage): Set<number> {
  const innermost = new Map<number, { span: number; count: number }>();
  for (const [id, range] of Object.entries(coverage.statementMap)) {
    const count = coverage.s[id] ?? 0;
    const span = range.end.line - range.start.line;
    for (let line = range.start.line; line <= range.end.line; line++) {
      const current = innermost.get(line);
      if (!current || span < current.span || (span === current.span && count > current.count)) innermost.set(line, { span, count });
    }
  }
  return new Set([...innermost].filter(([, { count }]) => count > 0).map(([line]) => line));
}

/** Compares what is declared with what covered source lines produce, and with the names reserved for later. */
export function findNamesProduced(input: {
  declared: DeclaredName[];
  /** Non-test source files by path, declarations excluded. */
  sources: Map<string, string>;
  coverage: Map<string, FileCoverage>;
  reserved: Record<string, string>;
}): NamesFinding {
  const produced = new Map<string, string>();
  const named = new Map<string, string>();
  for (const [file, text] of input.sources) {
    const fileCoverage = input.coverage.get(file);
    const ran = fileCoverage ? coveredLines(fileCoverage) : new Set<number>();
    for (const [index, content] of text.split("\n").entries()) {
      if (/^\s*(\/\/|\*|\/\*)/.test(content)) continue;
      for (const name of input.declared) {
        if (produced.has(name.id) || !name.patterns.some((pattern) => pattern.test(content))) continue;
        if (ran.has(index + 1)) produced.set(name.id, `${file}:${index + 1}`);
        else if (!named.has(name.id)) named.set(name.id, `${file}:${index + 1}`);
      }
    }
  }
  const namedUntested = new Map([...named].filter(([id]) => !produced.has(id)));
  const declaredIds = input.declared.map((name) => name.id);
  return {
    unproduced: declaredIds.filter((id) => !produced.has(id) && !(id in input.reserved)),
    staleReservations: Object.keys(input.reserved).filter((id) => produced.has(id) || !declaredIds.includes(id)),
    produced,
    namedUntested,
  };
}
