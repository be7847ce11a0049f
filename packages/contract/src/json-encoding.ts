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
  const out: string[] = [];
  const indent = options.indent ? " ".repeat(options.indent) : "";
  const seen = new Set<object>();
  write(value, "", "");
  return out.join("");

  function write(v: unknown, path: string, depthIndent: string): void {
    if (v === null) return void out.push("null");
    switch (typeof v) {
      case "boolean":
        return void out.push(v ? "true" : "false");
      case "string":
        return void out.push(quoteJsonString(v, options.escapeHtml ?? false));
      case "number":
        return void out.push(numberText(v, path));
      case "bigint":
        return void out.push(v.toString());
      case "object":
        break;
      default:
        throw new UnencodableValueError(path, `a ${typeof v}`);
    }
    if (v instanceof JsonNumber) {
      if (options.numbers === "integer" && !v.isInteger) throw new NonIntegerNumberError(path);
      return void out.push(v.literal);
    }
    const obj = v as object;
    if (seen.has(obj)) throw new UnencodableValueError(path, "a cycle");
    seen.add(obj);
    const inner = depthIndent + indent;
    if (Array.isArray(obj)) {
      if (obj.length === 0) out.push("[]");
      else {
        out.push("[");
        obj.forEach((item, index) => {
          if (index > 0) out.push(",");
          if (indent) out.push("\n", inner);
          write(item === undefined ? null : item, `${path}/${index}`, inner);
        });
        if (indent) out.push("\n", depthIndent);
        out.push("]");
      }
    } else {
      const record = obj as Record<string, unknown>;
      let keys = Object.keys(record).filter((key) => record[key] !== undefined);
      if (options.sortKeys) keys = keys.sort(compareCodePoints);
      if (keys.length === 0) out.push("{}");
      else {
        out.push("{");
        keys.forEach((key, index) => {
          if (index > 0) out.push(",");
          if (indent) out.push("\n", inner);
          out.push(quoteJsonString(key, options.escapeHtml ?? false), indent ? ": " : ":");
          write(record[key], `${path}/${escapePointer(key)}`, inner);
        });
        if (indent) out.push("\n", depthIndent);
        out.push("}");
      }
    }
    seen.delete(obj);
  }

  function numberText(n: number, path: string): string {
    if (!Number.isFinite(n)) throw new UnencodableValueError(path, String(n));
    if (options.numbers === "integer") {
      if (!Number.isInteger(n)) throw new NonIntegerNumberError(path);
      if (!Number.isSafeInteger(n)) {
        throw new NonIntegerNumberError(path, "an integer beyond 2^53 (pass it as a bigint or JsonNumber to keep it exact)");
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

export function escapePointer(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

const hex = "0123456789abcdef";

export function quoteJsonString(s: string, escapeHtml: boolean): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let replacement: string | undefined;
    if (c < 0x20) {
      replacement =
        c === 0x0a ? "\\n" : c === 0x0d ? "\\r" : c === 0x09 ? "\\t" : c === 0x08 ? "\\b" : c === 0x0c ? "\\f" : "\\u00" + hex[c >> 4] + hex[c & 0xf];
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
  let i = 0;
  const value = parseValue(0);
  skipWhitespace();
  if (i !== text.length) throw new JsonSyntaxError("unexpected data after the JSON value", i);
  return value;

  function skipWhitespace(): void {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  }

  function parseValue(depth: number): JsonValue {
    if (depth > 10000) throw new JsonSyntaxError("nesting too deep", i);
    skipWhitespace();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: Record<string, JsonValue> = {};
      skipWhitespace();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        skipWhitespace();
        if (text[i] !== '"') throw new JsonSyntaxError("expected a string key", i);
        const key = parseString();
        skipWhitespace();
        if (text[i] !== ":") throw new JsonSyntaxError("expected ':'", i);
        i++;
        Object.defineProperty(obj, key, { value: parseValue(depth + 1), enumerable: true, writable: true, configurable: true });
        skipWhitespace();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          return obj;
        } else throw new JsonSyntaxError("expected ',' or '}'", i);
      }
    }
    if (c === "[") {
      i++;
      const arr: JsonValue[] = [];
      skipWhitespace();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(parseValue(depth + 1));
        skipWhitespace();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
          return arr;
        } else throw new JsonSyntaxError("expected ',' or ']'", i);
      }
    }
    if (c === '"') return parseString();
    if (text.startsWith("true", i)) return (i += 4), true;
    if (text.startsWith("false", i)) return (i += 5), false;
    if (text.startsWith("null", i)) return (i += 4), null;
    const match = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    match.lastIndex = i;
    const m = match.exec(text);
    if (!m || m[0] === "-" || m[0] === "") throw new JsonSyntaxError("unexpected character", i);
    i += m[0].length;
    const literal = m[0];
    const n = Number(literal);
    if (/^-?(?:0|[1-9][0-9]*)$/.test(literal) && Number.isSafeInteger(n)) return n;
    return new JsonNumber(literal);
  }

  function parseString(): string {
    i++; // opening quote
    let out = "";
    let start = i;
    for (;;) {
      if (i >= text.length) throw new JsonSyntaxError("unterminated string", i);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) throw new JsonSyntaxError("control character in a string", i);
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"': out += '"'; break;
        case "\\": out += "\\"; break;
        case "/": out += "/"; break;
        case "b": out += "\b"; break;
        case "f": out += "\f"; break;
        case "n": out += "\n"; break;
        case "r": out += "\r"; break;
        case "t": out += "\t"; break;
        case "u": {
          const code = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(code)) throw new JsonSyntaxError("bad \\u escape", i);
          out += String.fromCharCode(parseInt(code, 16));
          i += 4;
          break;
        }
        default:
          throw new JsonSyntaxError("bad escape", i - 1);
      }
      start = i;
    }
  }
}
