import { JsonNumber, type JsonValue } from "./inputs.js";

/**
 * JSON encoding that matches Go's encoding/json byte for byte, so that hashes and
 * rendered files agree with the public reference implementation:
 * - strings escape `"`, `\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control characters as
 *   `\u00xx`, and always U+2028/U+2029; `<`, `>`, `&` only when `escapeHtml` is set;
 *   a lone surrogate becomes U+FFFD, as Go's decoder would have made it;
 * - object keys are sorted by code point (= UTF-8 byte order) when `sortKeys` is set;
 * - `indent` pretty-prints like json.MarshalIndent (empty `{}` and `[]` stay compact).
 */
export interface JsonEncodingOptions {
  /** "integer": only integers (the canonical hash form); "any": any finite number. */
  numbers: "integer" | "any";
  sortKeys: boolean;
  escapeHtml?: boolean;
  /** Spaces per nesting level; 0 or absent writes no whitespace. */
  indent?: number;
}

/** A number the integer-only encoding refuses, with the JSON pointer where it sits. */
export class NonIntegerNumberError extends Error {
  readonly path: string;
  constructor(path: string, detail = "a fractional or exponent number") {
    super(`${detail} at ${path || "/"}`);
    this.name = "NonIntegerNumberError";
    this.path = path;
  }
}

/** A value JSON cannot carry (NaN, a function, a cycle), with its JSON pointer. */
export class UnencodableValueError extends Error {
  readonly path: string;
  constructor(path: string, what: string) {
    super(`${what} at ${path || "/"} cannot be encoded as JSON`);
    this.name = "UnencodableValueError";
    this.path = path;
  }
}

export function encodeJson(value: unknown, options: JsonEncodingOptions): string {
  const prepared = prepareForNativeStringify(value, options);
  if (prepared !== notNative) {
    let text = JSON.stringify(prepared, null, options.indent || undefined);
    if (!nativeOutputNeedsGoEscaping.test(text)) {
      if (options.escapeHtml) text = text.replace(/[<>&]/g, (c) => htmlEscapes[c]!);
      return text;
    }
  }
  return encodeJsonByWalking(value, options);
}

const notNative = Symbol("notNative");
const htmlEscapes: Record<string, string> = { "<": "\\u003c", ">": "\\u003e", "&": "\\u0026" };
// Raw U+2028/U+2029, or a lone surrogate JSON.stringify escaped as \udXXX: Go writes those differently.
const nativeOutputNeedsGoEscaping = /[\u2028\u2029]|\\ud[89a-f]/i;
// JS objects list array-index keys first in numeric order, whatever their insertion order.
const arrayIndexKey = /^(?:0|[1-9][0-9]{0,9})$/;

/**
 * The fast path: a copy of `value` with object keys in their output order, ready for the
 * native JSON.stringify, or `notNative` when only the exact walker can write it (special
 * numbers, refused values, index-like keys, cycles). It throws nothing itself.
 */
function prepareForNativeStringify(value: unknown, options: JsonEncodingOptions): unknown {
  const integerOnly = options.numbers === "integer";
  let depth = 0;
  const visit = (v: unknown): unknown => {
    if (v === null) return v;
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        if (!Number.isFinite(v) || (integerOnly && !Number.isSafeInteger(v))) return notNative;
        return v;
      case "object":
        break;
      default:
        return notNative;
    }
    if (v instanceof JsonNumber || ++depth > 1000) return notNative;
    try {
      if (Array.isArray(v)) {
        let copy: unknown[] | undefined;
        for (let i = 0; i < v.length; i++) {
          const item: unknown = v[i];
          const visited = item === undefined ? null : visit(item);
          if (visited === notNative) return notNative;
          if (visited !== item && !copy) copy = v.slice(0, i);
          if (copy) copy.push(visited);
        }
        return copy ?? v;
      }
      const record = v as Record<string, unknown>;
      const keys = Object.keys(record);
      let sorted = keys;
      if (options.sortKeys) {
        for (let i = 1; i < keys.length; i++) {
          if (keys[i - 1]! > keys[i]!) {
            sorted = [...keys].sort();
            break;
          }
        }
      }
      let copy: Record<string, unknown> | undefined = sorted === keys ? undefined : {};
      for (let i = 0; i < sorted.length; i++) {
        const key = sorted[i]!;
        if (arrayIndexKey.test(key) || key === "__proto__" || surrogate.test(key)) return notNative;
        const item = record[key];
        const visited = item === undefined ? undefined : visit(item);
        if (visited === notNative) return notNative;
        if (visited !== item && !copy) {
          copy = {};
          for (let j = 0; j < i; j++) copy[sorted[j]!] = record[sorted[j]!];
        }
        if (copy && visited !== undefined) copy[key] = visited;
      }
      return copy ?? v;
    } finally {
      depth--;
    }
  };
  return visit(value);
}

/**
 * The exact encoder: walks the value itself. {@link encodeJson} uses it whenever the
 * native fast path cannot produce Go's bytes; exported so tests can compare the two.
 */
export function encodeJsonByWalking(value: unknown, options: JsonEncodingOptions): string {
  let out = "";
  const indent = options.indent ? " ".repeat(options.indent) : "";
  const escapeHtml = options.escapeHtml ?? false;
  const integerOnly = options.numbers === "integer";
  const seen = new Set<object>();
  // The JSON pointer tokens down to the value being written; joined only for an error.
  const path: (string | number)[] = [];
  const pointer = (): string => path.map((token) => "/" + escapePointer(String(token))).join("");
  write(value, "");
  return out;

  function write(v: unknown, depthIndent: string): void {
    if (v === null) return void (out += "null");
    switch (typeof v) {
      case "boolean":
        return void (out += v ? "true" : "false");
      case "string":
        return void (out += quoteJsonString(v, escapeHtml));
      case "number":
        return void (out += numberText(v));
      case "bigint":
        return void (out += v.toString());
      case "object":
        break;
      default:
        throw new UnencodableValueError(pointer(), `a ${typeof v}`);
    }
    if (v instanceof JsonNumber) {
      if (integerOnly && !v.isInteger) throw new NonIntegerNumberError(pointer());
      return void (out += v.literal);
    }
    const obj = v as object;
    if (seen.has(obj)) throw new UnencodableValueError(pointer(), "a cycle");
    seen.add(obj);
    const inner = depthIndent + indent;
    if (Array.isArray(obj)) {
      if (obj.length === 0) out += "[]";
      else {
        out += "[";
        for (let index = 0; index < obj.length; index++) {
          if (index > 0) out += ",";
          if (indent) out += "\n" + inner;
          path.push(index);
          const item: unknown = obj[index];
          write(item === undefined ? null : item, inner);
          path.pop();
        }
        if (indent) out += "\n" + depthIndent;
        out += "]";
      }
    } else {
      const record = obj as Record<string, unknown>;
      let keys = Object.keys(record);
      if (keys.some((key) => record[key] === undefined)) keys = keys.filter((key) => record[key] !== undefined);
      if (options.sortKeys) keys = keys.some(hasSurrogate) ? keys.sort(compareCodePoints) : keys.sort();
      if (keys.length === 0) out += "{}";
      else {
        out += "{";
        for (let index = 0; index < keys.length; index++) {
          const key = keys[index]!;
          if (index > 0) out += ",";
          if (indent) out += "\n" + inner;
          out += quoteJsonString(key, escapeHtml) + (indent ? ": " : ":");
          path.push(key);
          write(record[key], inner);
          path.pop();
        }
        if (indent) out += "\n" + depthIndent;
        out += "}";
      }
    }
    seen.delete(obj);
  }

  function numberText(n: number): string {
    if (!Number.isFinite(n)) throw new UnencodableValueError(pointer(), String(n));
    if (integerOnly) {
      if (!Number.isInteger(n)) throw new NonIntegerNumberError(pointer());
      if (!Number.isSafeInteger(n)) {
        throw new NonIntegerNumberError(pointer(), "an integer beyond 2^53 (pass it as a bigint or JsonNumber to keep it exact)");
      }
      return Object.is(n, -0) ? "0" : String(n);
    }
    return Object.is(n, -0) ? "0" : JSON.stringify(n);
  }
}

/** The canonical form the `h2` inputs hash is computed over: sorted keys, no whitespace, no HTML escaping. */
export function canonicalJson(value: unknown, numbers: "integer" | "any" = "integer"): string {
  return encodeJson(value, { numbers, sortKeys: true });
}

/** Compares two strings by Unicode code point, which is the UTF-8 byte order Go sorts map keys by. */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    // Surrogates (U+D800–DFFF) encode code points above U+FFFF, which sort after U+E000–FFFF.
    const sa = ca >= 0xd800 && ca <= 0xdfff;
    const sb = cb >= 0xd800 && cb <= 0xdfff;
    if (sa !== sb) return sa ? 1 : -1;
    return ca - cb;
  }
  return a.length - b.length;
}

// Without surrogates, UTF-16 order (the default sort) is code point order.
const surrogate = /[\ud800-\udfff]/;
function hasSurrogate(key: string): boolean {
  return surrogate.test(key);
}

export function escapePointer(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

const hex = "0123456789abcdef";

// JSON.stringify escapes strings exactly as Go does, except for U+2028/U+2029, lone surrogates and HTML.
const needsGoEscaping = /[\u2028\u2029\ud800-\udfff]/;
const needsHtmlEscaping = /[<>&]/;

export function quoteJsonString(s: string, escapeHtml: boolean): string {
  if (!needsGoEscaping.test(s) && !(escapeHtml && needsHtmlEscaping.test(s))) return JSON.stringify(s);
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let replacement: string | undefined;
    if (c < 0x20) {
      replacement =
        c === 0x0a
          ? "\\n"
          : c === 0x0d
            ? "\\r"
            : c === 0x09
              ? "\\t"
              : c === 0x08
                ? "\\b"
                : c === 0x0c
                  ? "\\f"
                  : "\\u00" + hex[c >> 4] + hex[c & 0xf];
    } else if (c === 0x22) replacement = '\\"';
    else if (c === 0x5c) replacement = "\\\\";
    else if (escapeHtml && (c === 0x3c || c === 0x3e || c === 0x26)) replacement = "\\u00" + hex[c >> 4] + hex[c & 0xf];
    else if (c === 0x2028 || c === 0x2029) replacement = "\\u202" + hex[c & 0xf];
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      replacement = "\ufffd";
    } else if (c >= 0xdc00 && c <= 0xdfff) replacement = "\ufffd";
    if (replacement !== undefined) {
      out += s.slice(start, i) + replacement;
      start = i + 1;
    }
  }
  return out + s.slice(start) + '"';
}

/** A JSON syntax error with the byte offset where parsing stopped. */
export class JsonSyntaxError extends Error {
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(`${message} at offset ${offset}`);
    this.name = "JsonSyntaxError";
    this.offset = offset;
  }
}

/**
 * Parses JSON keeping every number exactly: safe integers become numbers, any other
 * number a {@link JsonNumber} holding its literal (so `1.50` and `12345678901234567890`
 * hash as written, as they do in the reference). Error messages never quote the input.
 */
export function parseJsonExact(text: string): JsonValue {
  const parser = new ExactJsonParser(text);
  const value = parser.parseValue(0);
  parser.skipWhitespace();
  if (parser.offset !== text.length) throw new JsonSyntaxError("unexpected data after the JSON value", parser.offset);
  return value;
}

/** The characters a one-letter escape stands for (`\u` is read apart). */
const jsonEscapes: Readonly<Record<string, string>> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** A recursive-descent reader of one JSON text; `offset` is the next character to read. */
class ExactJsonParser {
  offset = 0;
  constructor(private readonly text: string) {}

  skipWhitespace(): void {
    while (this.offset < this.text.length) {
      const c = this.text.charCodeAt(this.offset);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.offset++;
      else break;
    }
  }

  parseValue(depth: number): JsonValue {
    if (depth > 10000) throw new JsonSyntaxError("nesting too deep", this.offset);
    this.skipWhitespace();
    const { text } = this;
    const c = text[this.offset];
    if (c === "{") return this.parseObject(depth);
    if (c === "[") return this.parseArray(depth);
    if (c === '"') return this.parseString();
    if (text.startsWith("true", this.offset)) return ((this.offset += 4), true);
    if (text.startsWith("false", this.offset)) return ((this.offset += 5), false);
    if (text.startsWith("null", this.offset)) return ((this.offset += 4), null);
    return this.parseNumber();
  }

  private parseObject(depth: number): Record<string, JsonValue> {
    this.offset++;
    const obj: Record<string, JsonValue> = {};
    this.skipWhitespace();
    if (this.text[this.offset] === "}") {
      this.offset++;
      return obj;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.offset] !== '"') throw new JsonSyntaxError("expected a string key", this.offset);
      const key = this.parseString();
      this.skipWhitespace();
      if (this.text[this.offset] !== ":") throw new JsonSyntaxError("expected ':'", this.offset);
      this.offset++;
      // defineProperty, not assignment: a "__proto__" key stays an own property.
      Object.defineProperty(obj, key, { value: this.parseValue(depth + 1), enumerable: true, writable: true, configurable: true });
      this.skipWhitespace();
      if (this.text[this.offset] === ",") this.offset++;
      else if (this.text[this.offset] === "}") {
        this.offset++;
        return obj;
      } else throw new JsonSyntaxError("expected ',' or '}'", this.offset);
    }
  }

  private parseArray(depth: number): JsonValue[] {
    this.offset++;
    const arr: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text[this.offset] === "]") {
      this.offset++;
      return arr;
    }
    for (;;) {
      arr.push(this.parseValue(depth + 1));
      this.skipWhitespace();
      if (this.text[this.offset] === ",") this.offset++;
      else if (this.text[this.offset] === "]") {
        this.offset++;
        return arr;
      } else throw new JsonSyntaxError("expected ',' or ']'", this.offset);
    }
  }

  /** A safe integer as a number; any other number as a {@link JsonNumber} keeping its literal. */
  private parseNumber(): JsonValue {
    const match = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    match.lastIndex = this.offset;
    const m = match.exec(this.text);
    if (!m || m[0] === "-" || m[0] === "") throw new JsonSyntaxError("unexpected character", this.offset);
    this.offset += m[0].length;
    const literal = m[0];
    const n = Number(literal);
    if (/^-?(?:0|[1-9][0-9]*)$/.test(literal) && Number.isSafeInteger(n)) return n;
    return new JsonNumber(literal);
  }

  private parseString(): string {
    const { text } = this;
    this.offset++; // opening quote
    let out = "";
    let start = this.offset;
    for (;;) {
      if (this.offset >= text.length) throw new JsonSyntaxError("unterminated string", this.offset);
      const c = text.charCodeAt(this.offset);
      if (c === 0x22) {
        out += text.slice(start, this.offset);
        this.offset++;
        return out;
      }
      if (c < 0x20) throw new JsonSyntaxError("control character in a string", this.offset);
      if (c !== 0x5c) {
        this.offset++;
        continue;
      }
      out += text.slice(start, this.offset) + this.readEscape();
      start = this.offset;
    }
  }

  /** The escape at `offset` (a backslash), read past. */
  private readEscape(): string {
    const e = this.text[this.offset + 1];
    this.offset += 2;
    if (e === "u") {
      const code = this.text.slice(this.offset, this.offset + 4);
      if (!/^[0-9a-fA-F]{4}$/.test(code)) throw new JsonSyntaxError("bad \\u escape", this.offset);
      this.offset += 4;
      return String.fromCharCode(parseInt(code, 16));
    }
    const escaped = e === undefined ? undefined : jsonEscapes[e];
    if (escaped === undefined) throw new JsonSyntaxError("bad escape", this.offset - 1);
    return escaped;
  }
}
