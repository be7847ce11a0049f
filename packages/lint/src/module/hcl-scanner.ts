// The tokens of HCL native syntax, read on demand: the parser asks for the next token, or for the
// next literal chunk of a quoted template or heredoc. Newlines are whitespace here, as they were to
// the tree-sitter grammar this replaces: the parser never needs them to tell two items apart.
import { ModuleParseError, type Comment } from "./model.js";

/** A token's kind: its punctuation as written, or one of the named kinds. */
export type TokenKind =
  | "ident"
  | "number"
  | "quote" // `"`: a quoted template follows
  | "heredoc" // `<<EOT` or `<<-EOT` and its newline: the heredoc's body follows
  | "eof"
  | "{"
  | "}"
  | "["
  | "]"
  | "("
  | ")"
  | ","
  | "="
  | ":"
  | "?"
  | "."
  | ".*"
  | "[*]"
  | "..."
  | "=>"
  | "~"
  | "+"
  | "-"
  | "*"
  | "/"
  | "%"
  | "!"
  | "=="
  | "!="
  | "<"
  | "<="
  | ">"
  | ">="
  | "&&"
  | "||";

/** Where a template's literal chunk stopped. */
export type ChunkEnd = "quote" | "interpolation" | "directive" | "heredoc-end";

const identStart = /[\p{ID_Start}_]/u;
const identPart = /[\p{ID_Continue}-]/u;

/** HCL's escapes in a quoted template's literal chunk, and the `$${`/`%%{` doubling, undone. */
export function unescapeTemplate(raw: string): string {
  if (!raw.includes("\\") && !raw.includes("$${") && !raw.includes("%%{")) return raw;
  return raw
    .replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (whole, code: string) => {
      if (code.length > 1) return String.fromCodePoint(parseInt(code.slice(1), 16));
      return escapes[code] ?? whole;
    })
    .replace(/\$\$\{/g, "${")
    .replace(/%%\{/g, "%{");
}

const escapes: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" };

/** The punctuation token at `start` (`c`, `c1`: its first two char codes), longest first; undefined if none starts there. */
function punctuationAt(src: string, start: number, c: number, c1: number): { kind: TokenKind; length: number } | undefined {
  let kind: TokenKind;
  let length = 1;
  switch (c) {
    case 34: // "
      kind = "quote";
      break;
    case 123: // {
      kind = "{";
      break;
    case 125: // }
      kind = "}";
      break;
    case 91: // [
      if (c1 === 42 && src.charCodeAt(start + 2) === 93) {
        kind = "[*]";
        length = 3;
      } else kind = "[";
      break;
    case 93: // ]
      kind = "]";
      break;
    case 40: // (
      kind = "(";
      break;
    case 41: // )
      kind = ")";
      break;
    case 44: // ,
      kind = ",";
      break;
    case 61: // =
      if (c1 === 61) {
        kind = "==";
        length = 2;
      } else if (c1 === 62) {
        kind = "=>";
        length = 2;
      } else kind = "=";
      break;
    case 58: // :
      kind = ":";
      break;
    case 63: // ?
      kind = "?";
      break;
    case 46: // .
      if (c1 === 42) {
        kind = ".*";
        length = 2;
      } else if (c1 === 46 && src.charCodeAt(start + 2) === 46) {
        kind = "...";
        length = 3;
      } else kind = ".";
      break;
    case 126: // ~
      kind = "~";
      break;
    case 43: // +
      kind = "+";
      break;
    case 45: // -
      kind = "-";
      break;
    case 42: // *
      kind = "*";
      break;
    case 47: // / (the scanner skipped comments before this)
      kind = "/";
      break;
    case 37: // %
      kind = "%";
      break;
    case 33: // !
      if (c1 === 61) {
        kind = "!=";
        length = 2;
      } else kind = "!";
      break;
    case 60: // < (`<<` starts a heredoc, read before this)
      if (c1 === 61) {
        kind = "<=";
        length = 2;
      } else kind = "<";
      break;
    case 62: // >
      if (c1 === 61) {
        kind = ">=";
        length = 2;
      } else kind = ">";
      break;
    case 38: // &
      if (c1 !== 38) return undefined;
      kind = "&&";
      length = 2;
      break;
    case 124: // |
      if (c1 !== 124) return undefined;
      kind = "||";
      length = 2;
      break;
    default:
      return undefined;
  }
  return { kind, length };
}

export class HclScanner {
  /** The next unread offset; while a token is current, its end (nothing is read ahead). */
  pos = 0;
  private line = 1;
  private lineStart = 0;

  kind: TokenKind = "eof";
  start = 0;
  end = 0;
  /** 1-based line and column (UTF-16 code units, as editors and the old parser count) of the token. */
  tokLine = 1;
  tokColumn = 1;
  /** The kind before the current one: digits after `.` are an index, never a fraction. */
  private previous: TokenKind = "eof";

  /** For a `heredoc` token: its end marker, and whether it is `<<-` (indentation is stripped). */
  heredocMarker = "";
  heredocFlush = false;

  /** Set by the chunk scanners: the chunk's offsets and position, and where it stopped. */
  chunkStart = 0;
  chunkEnd = 0;
  chunkLine = 1;
  chunkColumn = 1;
  /** For `heredoc-end`: the end offset of the closing marker. */
  markerEnd = 0;

  constructor(
    private readonly file: string,
    readonly source: string,
    /** Where comments go; undefined when the file holds no suppression, so none are kept. */
    private readonly comments: Comment[] | undefined,
  ) {}

  fail(message: string, line = this.tokLine, column = this.tokColumn): never {
    throw new ModuleParseError({ file: this.file, line, column, message });
  }

  text(): string {
    return this.source.slice(this.start, this.end);
  }

  /** Whether the current token is the identifier `word` (HCL's keywords are identifiers in context). */
  isWord(word: string): boolean {
    return this.kind === "ident" && this.end - this.start === word.length && this.source.startsWith(word, this.start);
  }

  /** Whether the token after the current one is an identifier, without consuming anything. */
  peekIsIdent(): boolean {
    const saved = {
      pos: this.pos,
      line: this.line,
      lineStart: this.lineStart,
      kind: this.kind,
      start: this.start,
      end: this.end,
      tokLine: this.tokLine,
      tokColumn: this.tokColumn,
      previous: this.previous,
    };
    const commentCount = this.comments?.length ?? 0;
    this.next();
    const ident = this.kind === "ident";
    Object.assign(this, saved);
    this.comments?.splice(commentCount);
    return ident;
  }

  /** Reads the next token from {@link pos}. */
  next(): void {
    this.previous = this.kind;
    this.skipSpace();
    const src = this.source;
    const start = this.pos;
    this.start = start;
    this.tokLine = this.line;
    this.tokColumn = start - this.lineStart + 1;
    if (start >= src.length) {
      this.kind = "eof";
      this.end = start;
      return;
    }
    const c = src.charCodeAt(start);
    const c1 = src.charCodeAt(start + 1);
    if (
      (c >= 97 && c <= 122) ||
      (c >= 65 && c <= 90) ||
      c === 95 ||
      (c > 127 && identStart.test(String.fromCodePoint(src.codePointAt(start)!)))
    ) {
      this.end = this.identEnd(start + (c >= 0xd800 && c <= 0xdbff ? 2 : 1));
      this.kind = "ident";
      this.pos = this.end;
      return;
    }
    if (c >= 48 && c <= 57) {
      this.end = this.numberEnd(start);
      this.kind = "number";
      this.pos = this.end;
      return;
    }
    if (c === 60 && c1 === 60) return this.heredocStart(start);
    const punctuation = punctuationAt(src, start, c, c1);
    if (!punctuation) this.fail(`syntax error: unexpected ${JSON.stringify(String.fromCodePoint(src.codePointAt(start)!))}`);
    this.kind = punctuation.kind;
    this.end = start + punctuation.length;
    this.pos = this.end;
  }

  /** Identifiers take letters, digits, `_`, `-` and `::` (provider-defined functions); `i` is past the first character. */
  private identEnd(i: number): number {
    const src = this.source;
    for (;;) {
      const c = src.charCodeAt(i);
      if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45) i++;
      else if (c === 58 && src.charCodeAt(i + 1) === 58) i += 2;
      else if (c > 127) {
        const ch = String.fromCodePoint(src.codePointAt(i)!);
        if (!identPart.test(ch)) return i;
        i += ch.length;
      } else return i;
    }
  }

  private numberEnd(start: number): number {
    const src = this.source;
    let i = digitsEnd(src, start);
    if (this.previous === ".") return i; // `a.0.1` is two legacy indexes, not the number 0.1
    if (src.charCodeAt(i) === 46 && isDigit(src.charCodeAt(i + 1))) i = digitsEnd(src, i + 1);
    const e = src.charCodeAt(i);
    if (e === 101 || e === 69) {
      const sign = src.charCodeAt(i + 1);
      const first = sign === 43 || sign === 45 ? i + 2 : i + 1;
      if (isDigit(src.charCodeAt(first))) i = digitsEnd(src, first);
    }
    return i;
  }

  /** `<<EOT` / `<<-EOT`: the marker, then the rest of the line must be blank. */
  private heredocStart(start: number): void {
    const src = this.source;
    let i = start + 2;
    this.heredocFlush = src.charCodeAt(i) === 45;
    if (this.heredocFlush) i++;
    const c = src.charCodeAt(i);
    if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95))
      this.fail("syntax error: a heredoc needs a marker right after <<, such as <<EOT");
    const markerEnd = this.identEnd(i + 1);
    this.heredocMarker = src.slice(i, markerEnd);
    i = markerEnd;
    while (src.charCodeAt(i) === 32 || src.charCodeAt(i) === 9 || src.charCodeAt(i) === 13) i++;
    if (src.charCodeAt(i) !== 10) this.fail("syntax error: a heredoc's marker must end its line", this.line, i - this.lineStart + 1);
    this.kind = "heredoc";
    this.end = markerEnd;
    this.pos = i + 1;
    this.line++;
    this.lineStart = this.pos;
  }

  /** Skips whitespace and comments, recording comments when asked to. */
  private skipSpace(): void {
    const src = this.source;
    let i = this.pos;
    for (;;) {
      const c = src.charCodeAt(i);
      if (c === 32 || c === 9 || c === 13) i++;
      else if (c === 10) {
        i++;
        this.line++;
        this.lineStart = i;
      } else if (c === 35 || (c === 47 && src.charCodeAt(i + 1) === 47)) {
        let end = src.indexOf("\n", i);
        if (end < 0) end = src.length;
        this.comment(i, end);
        i = end;
      } else if (c === 47 && src.charCodeAt(i + 1) === 42) {
        const close = src.indexOf("*/", i + 2);
        if (close < 0) this.fail('syntax error: missing "*/" to close this comment', this.line, i - this.lineStart + 1);
        this.comment(i, close + 2);
        for (let j = src.indexOf("\n", i); j >= 0 && j < close; j = src.indexOf("\n", j + 1)) {
          this.line++;
          this.lineStart = j + 1;
        }
        i = close + 2;
      } else if (c === 11 || c === 12 || c === 0xa0 || c === 0xfeff || (c > 127 && c < 0xd800 && /\s/.test(src[i]!))) i++;
      else break;
    }
    this.pos = i;
  }

  private comment(start: number, end: number): void {
    this.comments?.push({ line: this.line, column: start - this.lineStart + 1, text: this.source.slice(start, end) });
  }

  /**
   * Reads a quoted template's literal chunk from {@link pos} up to its closing quote, `${` or `%{`
   * (left unread); a newline or the end of the file first is an unterminated string.
   */
  quotedChunk(): ChunkEnd {
    const src = this.source;
    this.markChunk();
    let i = this.pos;
    for (;;) {
      const c = src.charCodeAt(i);
      if (c === 34) return this.endChunk(i, "quote");
      if (c === 10 || i >= src.length) this.fail("syntax error: missing a closing quote", this.line, i - this.lineStart + 1);
      if (c === 92) i += this.escapeLength(i);
      else if ((c === 36 || c === 37) && src.charCodeAt(i + 1) === 123) return this.endChunk(i, c === 36 ? "interpolation" : "directive");
      else if ((c === 36 || c === 37) && src.charCodeAt(i + 1) === c && src.charCodeAt(i + 2) === 123) i += 3;
      else i++;
    }
  }

  private escapeLength(i: number): number {
    const e = this.source[i + 1];
    const hex = e === "u" ? 4 : e === "U" ? 8 : 0;
    const digits = this.source.slice(i + 2, i + 2 + hex);
    if (hex > 0 && digits.length === hex && /^[0-9a-fA-F]+$/.test(digits)) return 2 + hex;
    if (e !== undefined && e in escapes) return 2;
    return this.fail(
      `syntax error: invalid escape ${JSON.stringify(this.source.slice(i, i + 2))} in a quoted string`,
      this.line,
      i - this.lineStart + 1,
    );
  }

  /**
   * Reads a heredoc's literal chunk from {@link pos} up to `${`, `%{` or the line holding only
   * the end marker (the chunk keeps the newline before that line).
   */
  heredocChunk(marker: string): ChunkEnd {
    const src = this.source;
    this.markChunk();
    let i = this.pos;
    for (;;) {
      if (i === this.lineStart) {
        const end = this.markerLineEnd(i, marker);
        if (end >= 0) {
          this.markerEnd = end;
          return this.endChunk(i, "heredoc-end");
        }
      }
      if (i >= src.length) this.fail(`syntax error: missing the heredoc's end marker ${marker}`, this.chunkLine, this.chunkColumn);
      const c = src.charCodeAt(i);
      if (c === 10) {
        i++;
        this.line++;
        this.lineStart = i;
      } else if ((c === 36 || c === 37) && src.charCodeAt(i + 1) === 123) return this.endChunk(i, c === 36 ? "interpolation" : "directive");
      else if ((c === 36 || c === 37) && src.charCodeAt(i + 1) === c && src.charCodeAt(i + 2) === 123) i += 3;
      else i++;
    }
  }

  /** If the line at `i` is blanks, `marker`, blanks, returns the marker's end offset; else -1. */
  private markerLineEnd(i: number, marker: string): number {
    const src = this.source;
    while (src.charCodeAt(i) === 32 || src.charCodeAt(i) === 9) i++;
    if (!src.startsWith(marker, i)) return -1;
    const end = i + marker.length;
    let j = end;
    while (src.charCodeAt(j) === 32 || src.charCodeAt(j) === 9 || src.charCodeAt(j) === 13) j++;
    return j >= src.length || src.charCodeAt(j) === 10 ? end : -1;
  }

  private markChunk(): void {
    this.chunkStart = this.pos;
    this.chunkLine = this.line;
    this.chunkColumn = this.pos - this.lineStart + 1;
  }

  private endChunk(i: number, end: ChunkEnd): ChunkEnd {
    this.chunkEnd = i;
    this.pos = i;
    return end;
  }

  /** Steps over the `${`/`%{` (or the quote, or the heredoc marker) a chunk stopped at, and reads the next token. */
  resume(skip: number): void {
    this.pos += skip;
    this.kind = "eof";
    this.next();
  }
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function digitsEnd(src: string, i: number): number {
  while (isDigit(src.charCodeAt(i))) i++;
  return i;
}
