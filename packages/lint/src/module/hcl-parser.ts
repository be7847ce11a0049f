// HCL native syntax (.tf, .tofu) by recursive descent over hcl-scanner's tokens, straight into the
// plain model of model.ts: blocks, attributes, every expression with its source text and position.
// It replaced tree-sitter, whose WASM start-up and node copying cost more than the whole lint.
import { HclScanner, unescapeTemplate, type TokenKind } from "./hcl-scanner.js";
import {
  maxNesting,
  ModuleParseError,
  tooDeepMessage,
  type Attribute,
  type Block,
  type Body,
  type Comment,
  type Expr,
  type ParsedFile,
  type ParseFailure,
  type Position,
  type TraversalStep,
} from "./model.js";

/** Parses one native-syntax file; throws {@link ModuleParseError} at the first error's position. */
export function parseHclFile(name: string, source: string): ParsedFile {
  const comments: Comment[] = [];
  // Comments matter only for suppressions: a file without one keeps none.
  const parser = new HclParser(name, source, source.includes("tfcapi-lint:ignore") ? comments : undefined);
  return { name, body: parser.parseFile(), comments, syntax: "native" };
}

type ForExpr = Extract<Expr, { kind: "for" }>;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
/** A template's literal chunk while its template is read: strip markers and `<<-` still adjust its value. */
type LiteralPart = { kind: "literal"; value: string; text: string; at: Position; syntax: "native" };

const closers: ReadonlySet<TokenKind> = new Set(["}", "]", ")", "eof"]);

/** Binding power of a binary operator (HCL's table, loosest first); 0 for any other token. */
function precedence(kind: TokenKind): number {
  switch (kind) {
    case "||":
      return 1;
    case "&&":
      return 2;
    case "==":
    case "!=":
      return 3;
    case "<":
    case "<=":
    case ">":
    case ">=":
      return 4;
    case "+":
    case "-":
      return 5;
    case "*":
    case "/":
    case "%":
      return 6;
    default:
      return 0;
  }
}

class HclParser {
  private readonly s: HclScanner;
  /** The end offset of the last token consumed: where the expression being built ends. */
  private prevEnd = 0;
  /** A load error (a repeated argument) found while parsing; a syntax error later in the file wins, as before. */
  private pending: ParseFailure | undefined;
  /** Blocks, expressions and unary operators open right now: recursion stops at maxNesting. */
  private depth = 0;

  constructor(
    private readonly fileName: string,
    private readonly source: string,
    comments: Comment[] | undefined,
  ) {
    this.s = new HclScanner(fileName, source, comments);
  }

  parseFile(): Body {
    this.s.next();
    if (this.kind() === "{") this.s.fail("a .tf file holds blocks and arguments, not a bare object");
    const body = this.body(false);
    if (this.pending) throw new ModuleParseError(this.pending);
    return body;
  }

  /** The current token's kind; a call, so TypeScript does not narrow it across advance(). */
  private kind(): TokenKind {
    return this.s.kind;
  }

  private at(): Position {
    return { file: this.fileName, line: this.s.tokLine, column: this.s.tokColumn };
  }

  private advance(): void {
    this.prevEnd = this.s.end;
    this.s.next();
  }

  private textFrom(start: number): string {
    return this.source.slice(start, this.prevEnd);
  }

  private unexpected(expected?: string): never {
    const s = this.s;
    const what = this.kind() === "eof" ? "end of file" : JSON.stringify(s.text().split("\n")[0]!.slice(0, 40));
    return s.fail(`syntax error: unexpected ${what}${expected ? `, expected ${expected}` : ""}`);
  }

  /** The current token is not `want`: a closing bracket or the end of the file means `want` is missing. */
  private missing(want: TokenKind): never {
    if (closers.has(this.kind())) return this.s.fail(`syntax error: missing ${JSON.stringify(want)}`);
    return this.unexpected(JSON.stringify(want));
  }

  private expect(kind: TokenKind): void {
    if (this.kind() !== kind) this.missing(kind);
    this.advance();
  }

  private body(nested: boolean): Body {
    const s = this.s;
    const attributes: Attribute[] = [];
    const blocks: Block[] = [];
    let names: Set<string> | undefined;
    for (;;) {
      if (this.kind() === "}" && nested) break;
      if (this.kind() === "eof") {
        if (nested) this.missing("}");
        break;
      }
      if (this.kind() !== "ident") this.unexpected("an argument or a block");
      const name = s.text();
      const at = this.at();
      this.advance();
      if (this.kind() === "=") {
        this.advance();
        const expr = this.expression();
        names ??= new Set();
        if (names.has(name)) this.pending ??= { ...at, message: `argument ${name} is set twice in the same block` };
        names.add(name);
        attributes.push({ name, at, expr });
      } else {
        blocks.push(this.block(name, at));
      }
    }
    return { attributes, blocks };
  }

  private block(type: string, at: Position): Block {
    const s = this.s;
    const labels: string[] = [];
    for (;;) {
      if (this.kind() === "ident") {
        labels.push(s.text());
        this.advance();
      } else if (this.kind() === "quote") {
        const label = this.quoted();
        if (label.kind !== "literal")
          throw new ModuleParseError({ ...label.at, message: "syntax error: a block label is a plain string, without ${…} or %{…}" });
        labels.push(label.value as string);
      } else break;
    }
    if (this.kind() !== "{") this.unexpected(labels.length > 0 ? '"{"' : '"=" or "{"');
    this.enter();
    this.advance();
    const body = this.body(true);
    this.depth--;
    this.advance();
    return { type, labels, at, body, syntax: "native" };
  }

  /** An expression: operations, then HCL's right-associative `? :`. */
  expression(): Expr {
    this.enter();
    const start = this.s.start;
    const condition = this.binary(1);
    if (this.kind() !== "?") return this.leave(condition);
    this.advance();
    const whenTrue = this.expression();
    this.expect(":");
    const whenFalse = this.expression();
    return this.leave({
      kind: "conditional",
      condition,
      whenTrue,
      whenFalse,
      text: this.textFrom(start),
      at: condition.at,
      syntax: "native",
    });
  }

  /** One level deeper; a parse error past maxNesting, where the input would overflow the stack. */
  private enter(): void {
    if (++this.depth > maxNesting) this.s.fail(`syntax error: ${tooDeepMessage}`);
  }

  private leave<T>(value: T): T {
    this.depth--;
    return value;
  }

  /** Binary operations binding at least as tightly as `min`, left-associative. */
  private binary(min: number): Expr {
    const start = this.s.start;
    let left = this.unary();
    for (;;) {
      const operator = this.kind();
      const power = precedence(operator);
      if (power === 0 || power < min) return left;
      this.advance();
      const right = this.binary(power + 1);
      left = { kind: "operation", operator, operands: [left, right], text: this.textFrom(start), at: left.at, syntax: "native" };
    }
  }

  private unary(): Expr {
    const operator = this.kind();
    if (operator !== "-" && operator !== "!") return this.postfix();
    const start = this.s.start;
    const at = this.at();
    this.advance();
    this.enter();
    const operand = this.unary();
    return this.leave({ kind: "operation", operator, operands: [operand], text: this.textFrom(start), at, syntax: "native" });
  }

  /** A term and its traversal steps: `.name`, `.0`, `[key]`, `.*`, `[*]`. */
  private postfix(): Expr {
    const s = this.s;
    const start = s.start;
    const head = this.primary();
    let steps: TraversalStep[] | undefined;
    for (;;) {
      const kind = this.kind();
      if (kind === ".") {
        const dotLine = s.tokLine;
        const dotColumn = s.tokColumn;
        this.advance();
        if (this.kind() === "ident") {
          (steps ??= []).push({ kind: "attr", name: s.text() });
        } else if (this.kind() === "number") {
          const digits = s.text();
          const key: Expr = {
            kind: "literal",
            value: Number(digits),
            text: digits,
            at: { file: this.fileName, line: dotLine, column: dotColumn },
            syntax: "native",
          };
          (steps ??= []).push({ kind: "index", key });
        } else {
          this.unexpected('an attribute name after "."');
        }
        this.advance();
      } else if (kind === "[") {
        this.advance();
        const key = this.expression();
        this.expect("]");
        (steps ??= []).push({ kind: "index", key });
      } else if (kind === ".*" || kind === "[*]") {
        (steps ??= []).push({ kind: "splat" });
        this.advance();
      } else break;
    }
    if (!steps) return head;
    const text = this.textFrom(start);
    if (head.kind === "traversal") return { kind: "traversal", root: head.root, steps, text, at: head.at, syntax: "native" };
    return { kind: "relative", source: head, steps, text, at: head.at, syntax: "native" };
  }

  private primary(): Expr {
    const s = this.s;
    switch (this.kind()) {
      case "ident": {
        const start = s.start;
        const at = this.at();
        const name = s.text();
        this.advance();
        if (this.kind() === "(") return this.call(name, start, at);
        if (name === "true" || name === "false") return { kind: "literal", value: name === "true", text: name, at, syntax: "native" };
        if (name === "null") return { kind: "literal", value: null, text: name, at, syntax: "native" };
        return { kind: "traversal", root: name, steps: [], text: name, at, syntax: "native" };
      }
      case "number": {
        const text = s.text();
        const at = this.at();
        this.advance();
        return { kind: "literal", value: Number(text), text, at, syntax: "native" };
      }
      case "quote":
        return this.quoted();
      case "heredoc":
        return this.heredoc();
      case "(": {
        const start = s.start;
        const at = this.at();
        this.advance();
        const inner = this.expression();
        this.expect(")");
        return { kind: "parens", inner, text: this.textFrom(start), at, syntax: "native" };
      }
      case "[":
        return this.tuple();
      case "{":
        return this.object();
      default:
        return this.unexpected("an expression");
    }
  }

  private call(name: string, start: number, at: Position): Expr {
    this.advance();
    const args: Expr[] = [];
    while (this.kind() !== ")") {
      args.push(this.expression());
      if (this.kind() === ",") this.advance();
      else if (this.kind() === "...") this.expect("...");
      else if (this.kind() !== ")") this.missing(")");
    }
    this.advance();
    return { kind: "call", name, args, text: this.textFrom(start), at, syntax: "native" };
  }

  private tuple(): Expr {
    const s = this.s;
    const start = s.start;
    const at = this.at();
    this.advance();
    if (s.isWord("for") && s.peekIsIdent()) return this.forExpr(start, at, "]");
    const items: Expr[] = [];
    while (this.kind() !== "]") {
      items.push(this.expression());
      if (this.kind() === ",") this.advance();
      else if (this.kind() !== "]") this.missing("]");
    }
    this.advance();
    return { kind: "tuple", items, text: this.textFrom(start), at, syntax: "native" };
  }

  private object(): Expr {
    const s = this.s;
    const start = s.start;
    const at = this.at();
    this.advance();
    if (s.isWord("for") && s.peekIsIdent()) return this.forExpr(start, at, "}");
    const items: { key: Expr; keyName: string | undefined; value: Expr }[] = [];
    while (this.kind() !== "}") {
      if (this.kind() === "eof" || this.kind() === "]" || this.kind() === ")") this.missing("}");
      const key = this.expression();
      if (this.kind() !== "=" && this.kind() !== ":") this.missing("=");
      this.advance();
      const value = this.expression();
      items.push({ key, keyName: keyName(key), value });
      if (this.kind() === ",") this.advance();
    }
    this.advance();
    return { kind: "object", items, text: this.textFrom(start), at, syntax: "native" };
  }

  /** `k, v in` (or `v in`) after a `for`, in an expression or a template directive. */
  private forHeader(): void {
    if (this.kind() !== "ident") this.unexpected("a variable name after for");
    this.advance();
    if (this.kind() === ",") {
      this.advance();
      if (this.kind() !== "ident") this.unexpected("a variable name");
      this.advance();
    }
    if (!this.s.isWord("in")) this.unexpected('"in"');
    this.advance();
  }

  /** `[for k, v in coll : value if cond]` or `{for k, v in coll : key => value... if cond}`, after the bracket. */
  private forExpr(start: number, at: Position, close: "]" | "}"): Expr {
    const s = this.s;
    this.advance();
    this.forHeader();
    const collection = this.expression();
    this.expect(":");
    const first = this.expression();
    const expr: Mutable<ForExpr> = { kind: "for", collection, value: first, text: "", at, syntax: "native" };
    if (close === "}") {
      this.expect("=>");
      expr.key = first;
      expr.value = this.expression();
      if (this.kind() === "...") this.advance();
    }
    if (s.isWord("if")) {
      this.advance();
      expr.condition = this.expression();
    }
    this.expect(close);
    expr.text = this.textFrom(start);
    return expr;
  }

  /** A quoted string: a literal when nothing is interpolated, else a template of chunks and expressions. */
  private quoted(): Expr {
    const start = this.s.start;
    const at = this.at();
    const { parts, interpolated } = this.templateParts(false);
    const text = this.textFrom(start);
    if (!interpolated)
      return { kind: "literal", value: parts.length > 0 ? (parts[0] as LiteralPart).value : "", text, at, syntax: "native" };
    return { kind: "template", parts, text, at, syntax: "native" };
  }

  private heredoc(): Expr {
    const s = this.s;
    const start = s.start;
    const at = this.at();
    const flush = s.heredocFlush;
    const { parts } = this.templateParts(true);
    if (flush) stripIndent(parts);
    return { kind: "template", parts, text: this.textFrom(start), at, syntax: "native" };
  }

  /**
   * Reads a template's chunks from just after its opening quote or heredoc line, up to and past
   * its end. `${…}` and the expressions of `%{if …}` / `%{for … in …}` become parts in order.
   */
  private templateParts(heredoc: boolean): { parts: Expr[]; interpolated: boolean } {
    const s = this.s;
    const marker = s.heredocMarker;
    const parts: Expr[] = [];
    const open: { word: string; line: number; column: number }[] = [];
    let interpolated = false;
    let stripLeading = false;
    for (;;) {
      const end = heredoc ? s.heredocChunk(marker) : s.quotedChunk();
      let literal: LiteralPart | undefined;
      if (s.chunkEnd > s.chunkStart) {
        const raw = this.source.slice(s.chunkStart, s.chunkEnd);
        const value = heredoc ? raw.replaceAll("$${", "${").replaceAll("%%{", "%{") : unescapeTemplate(raw);
        literal = {
          kind: "literal",
          value: stripLeading ? value.trimStart() : value,
          text: raw,
          at: { file: this.fileName, line: s.chunkLine, column: s.chunkColumn },
          syntax: "native",
        };
      }
      if (end === "quote" || end === "heredoc-end") {
        if (literal) parts.push(literal);
        const unclosed = open[open.length - 1];
        if (unclosed)
          s.fail(
            `syntax error: this %{ ${unclosed.word} } has no %{ end${unclosed.word === "for" ? "for" : "if"} }`,
            unclosed.line,
            unclosed.column,
          );
        this.prevEnd = end === "quote" ? s.chunkEnd + 1 : s.markerEnd;
        s.pos = this.prevEnd;
        s.resume(0);
        return { parts, interpolated };
      }
      interpolated = true;
      this.prevEnd = s.chunkEnd + 2;
      s.resume(2);
      if (this.kind() === "~") {
        if (literal) literal.value = literal.value.trimEnd();
        this.advance();
      }
      if (literal) parts.push(literal);
      if (end === "interpolation") parts.push(this.expression());
      else this.directive(parts, open);
      stripLeading = this.kind() === "~";
      if (stripLeading) this.advance();
      if (this.kind() !== "}") this.missing("}");
      this.prevEnd = s.end;
    }
  }

  /** The inside of `%{…}`: `if`, `else`, `endif`, `for`, `endfor`, kept balanced through `open`. */
  private directive(parts: Expr[], open: { word: string; line: number; column: number }[]): void {
    const s = this.s;
    const top = open[open.length - 1]?.word;
    if (s.isWord("if") || s.isWord("for")) {
      const isFor = s.isWord("for");
      const opened = { word: isFor ? "for" : "if", line: s.tokLine, column: s.tokColumn };
      this.advance();
      if (isFor) this.forHeader();
      parts.push(this.expression());
      open.push(opened);
    } else if (s.isWord("else") && top === "if") {
      open[open.length - 1]!.word = "else";
      this.advance();
    } else if ((s.isWord("endif") && (top === "if" || top === "else")) || (s.isWord("endfor") && top === "for")) {
      open.pop();
      this.advance();
    } else {
      this.unexpected(top === "for" ? "endfor" : top ? "else or endif" : "if or for");
    }
  }
}

/** The key as a name, when it is a bare identifier or a literal string. */
function keyName(key: Expr): string | undefined {
  if (key.kind === "traversal" && key.steps.length === 0) return key.root;
  if (key.kind === "literal" && typeof key.value === "string") return key.value;
  if (key.kind === "parens") return keyName(key.inner);
  return undefined;
}

/**
 * `<<-`: removes the smallest indentation of the heredoc's lines from each of them, as HCL does:
 * counted on literal text only, blank lines not counted, a line opening with `${` counting as 0.
 */
function stripIndent(parts: readonly Expr[]): void {
  // Each literal's lines, and whether each begins a line of the heredoc and counts for the indentation.
  const literals: { part: LiteralPart; lines: string[]; counted: boolean[] }[] = [];
  let smallest = Infinity;
  let lineStart = true;
  for (const part of parts) {
    if (part.kind !== "literal") {
      if (lineStart) smallest = 0;
      lineStart = false;
      continue;
    }
    const literal = part as LiteralPart;
    const lines = literal.value.split("\n");
    const last = lines.length - 1;
    // A line ending in the newline and holding only blanks is blank; the empty tail after a final newline is the next part's line.
    const counted = lines.map((line, i) => (i > 0 || lineStart) && (i < last ? line.trim() !== "" : line !== ""));
    counted.forEach((c, i) => {
      if (c) smallest = Math.min(smallest, lines[i]!.length - lines[i]!.trimStart().length);
    });
    literals.push({ part: literal, lines, counted });
    lineStart = literal.value.endsWith("\n");
  }
  if (smallest === 0 || smallest === Infinity) return;
  for (const { part, lines, counted } of literals)
    part.value = lines.map((line, i) => (counted[i] ? line.slice(smallest) : line)).join("\n");
}
