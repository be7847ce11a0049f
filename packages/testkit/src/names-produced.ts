/**
 * Which declared names (condition reasons, event reasons, annotations, labels, metrics) are produced on
 * a path some test exercises: a statement of non-test source that names it ran under the test command's
 * coverage. A name only declared, or produced only on statements no test runs, is not produced. Three
 * places that run without producing anything are followed to where they are used instead:
 * - a module-level `const`/`let`/`var` (a list of names runs at import): its names count where it is used;
 * - a helper under a name's `definedUnder` (a metrics class method a unit test calls): its uses count where
 *   code outside that folder calls it, and an optional branch only where the call passes its field;
 * - a name with a `context` (event reasons: a line that records an event) counts only on such a line, or
 *   inside such a call written over several lines.
 */

/** One declared name and how a producing line names it. */
export interface DeclaredName {
  /** `<category>:<name>`, for example `event:JobInterrupted` or `metric:captf_jobs_total`. */
  id: string;
  /** Any of these on a line names it there (each matched within one line). */
  patterns: RegExp[];
  /** A producing line must also match this (an event reason: a line that records an event). */
  context?: RegExp;
  /** Files under this path (the metrics classes) produce it only through a call from outside it. */
  definedUnder?: string;
  /** How a test's expectation names it, when not as its source does (a metric: by its exposed name); default `patterns`. */
  assertedBy?: RegExp[];
  /**
   * Instead of `assertedBy`: what one expectation must match, every pattern, read with the `const`/`let` statements of the
   * names it uses (a metric label value: `seriesValue(registry, "captf_…", taken)` with `const taken = { result: "taken" }`).
   */
  assertedWithin?: RegExp[];
}

interface Position {
  line: number;
  column: number;
}
interface Range {
  start: Position;
  end: Position;
}

/** The parts of an istanbul `coverage-final.json` entry this reads (lines 1-based, columns 0-based). */
export interface FileCoverage {
  statementMap: Record<string, Range>;
  s: Record<string, number>;
  fnMap?: Record<string, { decl: Range; loc: Range }>;
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

/**
 * The metrics a file of the metrics folder defines: `this.<property> = counter("<name>", …)` or
 * `new Gauge({ name: "<name>", … collect() … })`, produced where their property is filled or, for a metric
 * filled at scrape time, where its own collect() sets it. Uses under `definedUnder` count only through calls from outside.
 */
export function metricsDeclaredIn(text: string, definedUnder: string): DeclaredName[] {
  const metrics: DeclaredName[] = [];
  for (const match of text.matchAll(
    /this\.(\w+) = (?:counter|gauge|histogram|new (?:Counter|Gauge|Histogram))\(\s*(?:\{\s*name: )?"(\w+)"/g,
  )) {
    const [, property = "", name = ""] = match;
    const patterns = [metricUsePattern(property)];
    // This declaration's statement only, never the next metric's collect().
    const block = text.slice(match.index, statementEnd(text, match.index));
    const collectLine = /collect\(\)/.test(block) ? block.split("\n").find((line) => line.includes("this.set(")) : undefined;
    if (collectLine) patterns.push(new RegExp(escapeRegExp(collectLine.trim())));
    metrics.push({ id: `metric:${name}`, patterns, definedUnder, assertedBy: [new RegExp(`(?<![\\w])${escapeRegExp(name)}(?![\\w])`)] });
  }
  return metrics;
}

/**
 * The names of one enumerated metric label's values (`metric-label:captf_state_backups_total{result="skipped"}`): produced
 * where source names the value, asserted where an expectation reads a series of one of the metrics (any `captf_*` when
 * none are named) with that value, as a label object (`result: "skipped"`) or in the exposition (`result="skipped"`).
 */
export function metricLabelValueNames(group: { label: string; metrics?: readonly string[]; values: readonly string[] }): DeclaredName[] {
  const metrics = group.metrics ? `(?:${group.metrics.map(escapeRegExp).join("|")})` : "captf_\\w+";
  const where = group.metrics ? group.metrics.join("|") : "captf_*";
  return group.values.map((value) => ({
    id: `metric-label:${where}{${group.label}="${value}"}`,
    patterns: [literalPattern(value)],
    // The metric's name, then the label with this value, in the expectation or a binding it uses.
    assertedWithin: [
      new RegExp(`(?<![\\w])${metrics}(?![\\w])`),
      new RegExp(`(?<![\\w])${escapeRegExp(group.label)}(?:"?\\s*:\\s*|=\\\\?)["'\`]${escapeRegExp(value)}\\\\?["'\`]`),
    ],
  }));
}

/**
 * A line that records an event: the recorder's `.record(`, the `event(`/`emit(`/`recordEvent(` helpers, or an event entry
 * (`reason:` beside `note`).
 */
export const eventRecordingLine = /\.record\(|\b(?:event|emit|recordEvent)\(|\breason:.*\bnote\b|\bnote\b.*\breason:/;

/** Where the statement starting at `start` ends: its `;` (or the bracket closing around it) outside strings and comments. */
export function statementEnd(text: string, start: number): number {
  let depth = 0;
  for (let index = start; index < text.length; index++) {
    const char = text[index] ?? "";
    const skipped = notCodeEnd(text, index);
    if (skipped !== undefined) index = skipped;
    else if ("([{".includes(char)) depth++;
    else if (")]}".includes(char)) {
      if (--depth < 0) return index;
    } else if (char === ";" && depth === 0) return index + 1;
  }
  return text.length;
}

/** Where a string or comment starting at `index` ends (its last character); undefined when code starts there. */
function notCodeEnd(text: string, index: number): number | undefined {
  const char = text[index];
  if (char === '"' || char === "'" || char === "`") return stringEnd(text, index);
  if (char !== "/") return undefined;
  const after = text[index + 1];
  const end = after === "/" ? text.indexOf("\n", index) : after === "*" ? text.indexOf("*/", index + 2) + 1 : undefined;
  if (end === undefined) return undefined;
  return end <= 0 ? text.length : end;
}

function stringEnd(text: string, open: number): number {
  for (let index = open + 1; index < text.length; index++) {
    if (text[index] === "\\") index++;
    else if (text[index] === text[open]) return index;
  }
  return text.length;
}

const before = (a: Position, b: Position) => a.line < b.line || (a.line === b.line && a.column <= b.column);
const contains = (range: Range, at: Position) => before(range.start, at) && before(at, range.end);
const size = (range: Range) => (range.end.line - range.start.line) * 100_000 + range.end.column - range.start.column;

/** One source file with its coverage: what ran at a position, and which function holds it. */
class SourceFile {
  readonly lineStarts: number[] = [0];
  constructor(
    readonly path: string,
    readonly text: string,
    readonly coverage: FileCoverage | undefined,
  ) {
    for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) this.lineStarts.push(index + 1);
  }

  position(index: number): Position {
    let line = this.lineStarts.length - 1;
    while ((this.lineStarts[line] ?? 0) > index) line--;
    return { line: line + 1, column: index - (this.lineStarts[line] ?? 0) };
  }

  lineAt(index: number): string {
    const start = this.text.lastIndexOf("\n", index - 1) + 1;
    const end = this.text.indexOf("\n", index);
    return this.text.slice(start, end === -1 ? undefined : end);
  }

  /**
   * The call or object literal around `index` (its innermost bracket left open before it), from the
   * start of that bracket's line to its closing bracket, on one line: a formatter may put a call's
   * arguments on lines of their own.
   */
  bracketsAround(index: number): string {
    const open: number[] = [];
    for (let at = 0; at < index; at++) {
      const char = this.text[at] ?? "";
      const skipped = notCodeEnd(this.text, at);
      if (skipped !== undefined) at = skipped;
      else if ("([{".includes(char)) open.push(at);
      else if (")]}".includes(char)) open.pop();
    }
    const innermost = open.at(-1);
    if (innermost === undefined) return this.lineAt(index);
    const start = this.text.lastIndexOf("\n", innermost - 1) + 1;
    return this.text.slice(start, statementEnd(this.text, innermost + 1) + 1).replace(/\s*\n\s*/g, " ");
  }

  /** The innermost statement holding the position ran at least once. */
  ran(at: Position): boolean {
    let innermost: { size: number; count: number } | undefined;
    for (const [id, range] of Object.entries(this.coverage?.statementMap ?? {})) {
      if (!contains(range, at)) continue;
      if (!innermost || size(range) < innermost.size) innermost = { size: size(range), count: this.coverage?.s[id] ?? 0 };
    }
    return (innermost?.count ?? 0) > 0;
  }

  /** The outermost function holding the position (a class method, a top-level function), with its name if it has one. */
  outermostFunction(at: Position): { name?: string; decl: Range } | undefined {
    let outermost: { decl: Range; loc: Range } | undefined;
    for (const fn of Object.values(this.coverage?.fnMap ?? {}))
      if (contains(fn.loc, at) && (!outermost || size(fn.loc) > size(outermost.loc))) outermost = fn;
    if (!outermost) return undefined;
    const declStart = (this.lineStarts[outermost.decl.start.line - 1] ?? 0) + outermost.decl.start.column;
    return { name: /^(?:async\s+)?(?:function\s*)?([\w$]+)/.exec(this.text.slice(declStart, declStart + 200))?.[1], decl: outermost.decl };
  }

  isDeclarationAt(at: Position): boolean {
    return Object.values(this.coverage?.fnMap ?? {}).some((fn) => fn.decl.start.line === at.line && fn.decl.start.column === at.column);
  }
}

const isComment = (line: string) => /^\s*(\/\/|\*|\/\*)/.test(line);
const topLevelBinding = /^(?:export\s+)?(?:const|let|var)\s+([\w$]+)/;

/** The module-level `const`/`let`/`var` statement holding `index`, if any: its name and extent. */
function topLevelDeclaration(file: SourceFile, index: number): { name: string; start: number; end: number } | undefined {
  for (let line = file.position(index).line - 1; line >= 0; line--) {
    const start = file.lineStarts[line] ?? 0;
    const content = file.lineAt(start);
    const binding = topLevelBinding.exec(content);
    if (binding) {
      const end = statementEnd(file.text, start);
      return end > index ? { name: binding[1] ?? "", start, end } : undefined;
    }
    if (/^[^\s\])}]/.test(content) && !isComment(content)) return undefined;
  }
  return undefined;
}

/** Fields an optional branch of a helper line reads from its argument: `status.healthy !== undefined`, `if (options.buildInfo)`. */
function guardedFields(line: string): string[] {
  const guards = [...line.matchAll(/\b([\w$]+)\.([\w$]+) !== undefined/g), ...line.matchAll(/\bif \(([\w$]+)\.([\w$]+)\)/g)];
  return guards.filter(([, object]) => object !== "this").map(([, , field]) => field ?? "");
}

const allMatches = (pattern: RegExp, text: string) => text.matchAll(new RegExp(pattern.source, pattern.flags.replace("g", "") + "g"));

/**
 * Whether the short statement begun on the line of `index` (an `if` whose body a formatter put on the
 * next line) holds a match of `context` that ran itself: the condition running is not the event recorded.
 */
function recordsInStatementOf(file: SourceFile, index: number, context: RegExp): boolean {
  const start = file.text.lastIndexOf("\n", index - 1) + 1;
  const end = statementEnd(file.text, start);
  if (end - start > 400) return false;
  const match = context.exec(file.text.slice(start, end).replace(/\n/g, " "));
  return match !== null && file.ran(file.position(start + match.index));
}

/** Compares what is declared with what covered source statements produce, and with the names reserved for later. */
export function findNamesProduced(input: {
  declared: DeclaredName[];
  /** Non-test source files by path, declarations excluded. */
  sources: Map<string, string>;
  coverage: Map<string, FileCoverage>;
  reserved: Record<string, string>;
}): NamesFinding {
  const files = [...input.sources].map(([path, text]) => new SourceFile(path, text, input.coverage.get(path)));
  const at = (file: SourceFile, index: number) => `${file.path}:${file.position(index).line}`;

  /** Uses of a module-level constant: in its own file outside its statement, and in the files importing it. */
  function usesOf(file: SourceFile, declaration: { name: string; start: number; end: number }) {
    const use = new RegExp(`(?<![\\w$.#])${escapeRegExp(declaration.name)}\\b`);
    const importing = new RegExp(`import\\s+(?:type\\s+)?\\{[^}]*\\b${escapeRegExp(declaration.name)}\\b[^}]*\\}\\s*from`);
    const uses: { file: SourceFile; index: number }[] = [];
    for (const other of files) {
      if (other !== file && !importing.test(other.text)) continue;
      for (const match of allMatches(use, other.text)) {
        const outside = other !== file || match.index < declaration.start || match.index >= declaration.end;
        if (outside && !/^\s*import\b/.test(other.lineAt(match.index)) && !isComment(other.lineAt(match.index)))
          uses.push({ file: other, index: match.index });
      }
    }
    return uses;
  }

  /** Calls of a helper function or method, with the text of their arguments. */
  function callsOf(helper: string) {
    const call = new RegExp(`(?<![\\w$#])${escapeRegExp(helper)}\\(`);
    const calls: { file: SourceFile; index: number; args: string }[] = [];
    for (const file of files) {
      for (const match of allMatches(call, file.text)) {
        const open = match.index + match[0].length - 1;
        if (file.isDeclarationAt(file.position(match.index)) || /\bfunction\s+$/.test(file.text.slice(match.index - 20, match.index)))
          continue;
        if (!isComment(file.lineAt(match.index)))
          calls.push({ file, index: match.index, args: file.text.slice(open + 1, statementEnd(file.text, open + 1)) });
      }
    }
    return calls;
  }

  /** Whether the name at `index` of `file` is produced on a tested path, following constants and helpers to their uses. */
  function produces(name: DeclaredName, file: SourceFile, index: number, seen: Set<string>): string | undefined {
    const position = file.position(index);
    const key = `${file.path}:${index}`;
    if (!file.coverage || seen.has(key)) return undefined;
    const followed = new Set([...seen, key]);
    const fn = file.outermostFunction(position);
    // In no function (istanbul maps no `#private` method either): a module-level constant runs at import, so its uses count instead.
    const declaration = fn ? undefined : topLevelDeclaration(file, index);
    if (declaration) {
      for (const use of usesOf(file, declaration)) {
        const where = produces(name, use.file, use.index, followed);
        if (where) return where;
      }
      return undefined;
    }
    if (!file.ran(position)) return undefined;
    if (name.definedUnder && file.path.startsWith(name.definedUnder) && fn?.name && fn.name !== "constructor") {
      const fields = guardedFields(file.lineAt(index));
      for (const call of callsOf(fn.name)) {
        if (!fields.every((field) => new RegExp(`\\b${escapeRegExp(field)}\\b`).test(call.args))) continue;
        const where = produces({ ...name, context: undefined }, call.file, call.index, followed);
        if (where) return where;
      }
      return undefined;
    }
    const inContext =
      !name.context ||
      name.context.test(file.lineAt(index)) ||
      name.context.test(file.bracketsAround(index)) ||
      recordsInStatementOf(file, index, name.context);
    return inContext ? at(file, index) : undefined;
  }

  const produced = new Map<string, string>();
  const named = new Map<string, string>();
  for (const name of input.declared) {
    for (const file of files) {
      for (const pattern of name.patterns) {
        for (const match of allMatches(pattern, file.text)) {
          if (produced.has(name.id) || isComment(file.lineAt(match.index))) continue;
          const where = produces(name, file, match.index, new Set());
          if (where) produced.set(name.id, where);
          else if (!named.has(name.id)) named.set(name.id, at(file, match.index));
        }
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

/**
 * Where a test's expectation starts: `expect(…)` with its matchers, an assertion helper the suites
 * write (`expectEvent(…)`, `eventually(…)`, `waitForCondition(…)`, `until…`, `assert…`), or a table
 * of cases (`it.each(…)`, `it.each<T>(…)`), whose rows are what its expectations compare.
 */
const expectationStart = new RegExp(
  [
    String.raw`(?<![\w$.])(?:expect\w*|eventually|waitFor\w*|until\w*|assert\w*)(?:\.\w+)*\s*\(`,
    String.raw`(?<![\w$.])(?:it|test|describe)\.each(?:<[^()]*>)?\s*\(`,
  ].join("|"),
  "g",
);
const localBinding = /^\s*(?:export\s+)?(?:const|let|var)\s+([\w$]+)/;
/** The arguments of a matcher or of a table of cases: what a value is compared with, not the value. */
const expectedValueStart = /\.(?:to\w+|each(?:<[^()]*>)?)\s*\(/g;

/**
 * Which declared names a test asserts: a test file names one inside an expectation, or inside a
 * `const`/`let` that a matcher or a table of cases of the same file compares with (an expected
 * object, `it.each(cases)`). A name a test only mentions (a fixture's input, a comment) is not
 * asserted. Returns where each is.
 */
export function findNamesAsserted(input: { declared: DeclaredName[]; tests: Map<string, string> }): Map<string, string> {
  const asserted = new Map<string, string>();
  for (const [path, text] of input.tests) {
    const file = new SourceFile(path, text, undefined);
    const spans = [...text.matchAll(expectationStart)].map((match) => [match.index, statementEnd(text, match.index)] as const);
    const inSpan = (index: number) => spans.some(([start, end]) => index >= start && index < end);
    const expectedValues = [...text.matchAll(expectedValueStart)].map((match) => {
      const open = match.index + match[0].length;
      return [open, statementEnd(text, open)] as const;
    });
    const inExpectedValue = (index: number) => expectedValues.some(([start, end]) => index >= start && index < end);
    /** The `const`/`let` statement around `index` whose name an expectation compares with. */
    const readByExpectation = (index: number) => {
      for (let line = file.position(index).line - 1; line >= 0; line--) {
        const start = file.lineStarts[line] ?? 0;
        const binding = localBinding.exec(file.lineAt(start));
        if (!binding || statementEnd(text, start) <= index) continue;
        const use = new RegExp(`(?<![\\w$.])${escapeRegExp(binding[1] ?? "")}\\b`, "g");
        return [...text.matchAll(use)].some((match) => inExpectedValue(match.index));
      }
      return false;
    };
    const withBindings = expectationsWithBindings(file, spans);
    for (const name of input.declared) {
      if (asserted.has(name.id)) continue;
      if (name.assertedWithin) {
        const found = withBindings.find(({ text: expectation }) => name.assertedWithin?.every((pattern) => pattern.test(expectation)));
        if (found) asserted.set(name.id, `${path}:${file.position(found.start).line}`);
        continue;
      }
      for (const pattern of name.assertedBy ?? name.patterns)
        for (const match of allMatches(pattern, text))
          if (!asserted.has(name.id) && !isComment(file.lineAt(match.index)) && (inSpan(match.index) || readByExpectation(match.index)))
            asserted.set(name.id, `${path}:${file.position(match.index).line}`);
    }
  }
  return asserted;
}

/**
 * Each expectation's text followed by the `const`/`let` statements of the file whose names it uses (their metric series'
 * labels, say).
 */
function expectationsWithBindings(file: SourceFile, spans: readonly (readonly [number, number])[]): { start: number; text: string }[] {
  const text = file.text;
  const bindings = new Map<string, string>();
  for (const start of file.lineStarts) {
    const name = localBinding.exec(file.lineAt(start))?.[1];
    if (name && !bindings.has(name)) bindings.set(name, text.slice(start, statementEnd(text, start)));
  }
  return spans.map(([start, end]) => {
    const expectation = text.slice(start, end);
    const used = [...new Set(expectation.match(/[\w$]+/g) ?? [])].flatMap((word) => bindings.get(word) ?? []);
    return { start, text: [expectation, ...used].join("\n") };
  });
}
