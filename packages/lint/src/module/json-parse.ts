// JSON syntax (.tf.json, .tofu.json): a small JSON reader that keeps positions, then Terraform's
// JSON conventions (block types as object keys, labels as nested keys) mapped onto model.ts.
import {
  maxNesting,
  ModuleParseError,
  tooDeepMessage,
  type Attribute,
  type Block,
  type Body,
  type Expr,
  type ParsedFile,
  type Position,
  type Traversal,
} from "./model.js";

type JsonNode =
  | { type: "object"; entries: { key: string; keyStart: number; value: JsonNode }[]; start: number; end: number }
  | { type: "array"; items: JsonNode[]; start: number; end: number }
  | { type: "string"; value: string; start: number; end: number }
  | { type: "number"; value: number; start: number; end: number }
  | { type: "boolean"; value: boolean; start: number; end: number }
  | { type: "null"; start: number; end: number };

/** Reads JSON text into nodes that remember their offsets; errors carry the offset. */
class JsonReader {
  private i = 0;
  /** Objects and arrays open right now: recursion stops at maxNesting. */
  private depth = 0;
  constructor(private readonly text: string) {}

  document(): JsonNode {
    this.space();
    const value = this.value();
    this.space();
    if (this.i < this.text.length) this.fail("unexpected text after the JSON value");
    return value;
  }

  fail(message: string, at = this.i): never {
    throw new JsonSyntax(message, at);
  }

  private space(): void {
    while (this.i < this.text.length && " \t\r\n".includes(this.text[this.i]!)) this.i++;
  }

  private value(): JsonNode {
    const c = this.text[this.i];
    const start = this.i;
    if (c === "{" || c === "[") {
      if (++this.depth > maxNesting) this.fail(tooDeepMessage);
      const node = c === "{" ? this.object() : this.array();
      this.depth--;
      return node;
    }
    if (c === '"') return { type: "string", value: this.string(), start, end: this.i };
    if (c === "t" && this.text.startsWith("true", this.i)) return ((this.i += 4), { type: "boolean", value: true, start, end: this.i });
    if (c === "f" && this.text.startsWith("false", this.i)) return ((this.i += 5), { type: "boolean", value: false, start, end: this.i });
    if (c === "n" && this.text.startsWith("null", this.i)) return ((this.i += 4), { type: "null", start, end: this.i });
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.i, this.i + 64));
    if (number) {
      this.i += number[0].length;
      return { type: "number", value: Number(number[0]), start, end: this.i };
    }
    return this.fail(c === undefined ? "unexpected end of the file" : `unexpected ${JSON.stringify(c)}`);
  }

  private object(): JsonNode {
    const start = this.i++;
    const entries: { key: string; keyStart: number; value: JsonNode }[] = [];
    this.space();
    if (this.text[this.i] === "}") return (this.i++, { type: "object", entries, start, end: this.i });
    for (;;) {
      this.space();
      if (this.text[this.i] !== '"') this.fail("expected a quoted object key");
      const keyStart = this.i;
      const key = this.string();
      this.space();
      if (this.text[this.i] !== ":") this.fail('expected ":" after an object key');
      this.i++;
      this.space();
      entries.push({ key, keyStart, value: this.value() });
      this.space();
      const c = this.text[this.i];
      this.i++;
      if (c === "}") return { type: "object", entries, start, end: this.i };
      if (c !== ",") this.fail('expected "," or "}"', this.i - 1);
    }
  }

  private array(): JsonNode {
    const start = this.i++;
    const items: JsonNode[] = [];
    this.space();
    if (this.text[this.i] === "]") return (this.i++, { type: "array", items, start, end: this.i });
    for (;;) {
      this.space();
      items.push(this.value());
      this.space();
      const c = this.text[this.i];
      this.i++;
      if (c === "]") return { type: "array", items, start, end: this.i };
      if (c !== ",") this.fail('expected "," or "]"', this.i - 1);
    }
  }

  private string(): string {
    const start = this.i;
    const end = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
    end.lastIndex = start;
    const match = end.exec(this.text);
    if (!match) this.fail("invalid string");
    this.i = start + match[0].length;
    return JSON.parse(match[0]) as string;
  }
}

class JsonSyntax extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Nested block types Terraform reads inside a JSON block body, with their label counts. */
const nestedBlocks: Record<string, Record<string, number>> = {
  terraform: { backend: 1, cloud: 0, required_providers: 0 },
  resource: { lifecycle: 0 },
  data: { lifecycle: 0 },
  variable: { validation: 0 },
  output: { precondition: 0 },
};

/** Label counts of the top-level block types the checks read. */
const topLevelBlocks: Record<string, number> = {
  terraform: 0,
  locals: 0,
  variable: 1,
  output: 1,
  provider: 1,
  module: 1,
  resource: 2,
  data: 2,
};

/** Parses one JSON-syntax file; throws {@link ModuleParseError} with the reader's position. */
export function parseJsonFile(name: string, source: string): ParsedFile {
  const lines = lineStarts(source);
  const pos = (offset: number): Position => {
    let lo = 0;
    let hi = lines.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lines[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { file: name, line: lo + 1, column: offset - lines[lo]! + 1 };
  };
  let root: JsonNode;
  try {
    root = new JsonReader(source).document();
  } catch (error) {
    if (error instanceof JsonSyntax) throw new ModuleParseError({ ...pos(error.offset), message: `invalid JSON: ${error.message}` });
    throw error;
  }
  if (root.type !== "object") throw new ModuleParseError({ ...pos(root.start), message: "a JSON module file must hold an object" });
  const mapper = new JsonMapper(source, pos);
  return { name, body: mapper.topLevel(root), comments: [], syntax: "json" };
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

class JsonMapper {
  constructor(
    private readonly source: string,
    private readonly pos: (offset: number) => Position,
  ) {}

  topLevel(root: Extract<JsonNode, { type: "object" }>): Body {
    const blocks: Block[] = [];
    for (const entry of root.entries) {
      const labelCount = topLevelBlocks[entry.key];
      if (labelCount === undefined) continue;
      blocks.push(...this.blocks(entry.key, entry.value, labelCount, [], entry.keyStart));
    }
    return { attributes: [], blocks };
  }

  private blocks(type: string, node: JsonNode, labelsLeft: number, labels: string[], at: number): Block[] {
    if (labelsLeft > 0) {
      if (node.type === "array") return node.items.flatMap((item) => this.blocks(type, item, labelsLeft, labels, item.start));
      if (node.type !== "object") this.fail(node, `block ${type} needs an object keyed by its labels`);
      return node.entries
        .filter((e) => e.key !== "//")
        .flatMap((e) => this.blocks(type, e.value, labelsLeft - 1, [...labels, e.key], e.keyStart));
    }
    if (node.type === "array") return node.items.flatMap((item) => this.blocks(type, item, 0, labels, item.start));
    if (node.type !== "object") this.fail(node, `block ${type} must be an object`);
    return [{ type, labels, at: this.pos(at), body: this.body(node, nestedBlocks[type] ?? {}), syntax: "json" }];
  }

  private body(node: Extract<JsonNode, { type: "object" }>, nested: Record<string, number>): Body {
    const attributes: Attribute[] = [];
    const blocks: Block[] = [];
    for (const entry of node.entries) {
      if (entry.key === "//") continue;
      const labelCount = nested[entry.key];
      if (labelCount !== undefined) blocks.push(...this.blocks(entry.key, entry.value, labelCount, [], entry.keyStart));
      else attributes.push({ name: entry.key, at: this.pos(entry.keyStart), expr: this.expr(entry.value) });
    }
    return { attributes, blocks };
  }

  private expr(node: JsonNode): Expr {
    const at = this.pos(node.start);
    const text = this.source.slice(node.start, node.end);
    switch (node.type) {
      case "string":
        if (/(^|[^$])\$\{/.test(node.value) || /(^|[^%])%\{/.test(node.value)) {
          return { kind: "json-template", references: templateReferences(node.value, at), text: node.value, at, syntax: "json" };
        }
        return { kind: "literal", value: node.value.replace(/\$\$\{/g, "${").replace(/%%\{/g, "%{"), text: node.value, at, syntax: "json" };
      case "number":
      case "boolean":
        return { kind: "literal", value: node.value, text, at, syntax: "json" };
      case "null":
        return { kind: "literal", value: null, text, at, syntax: "json" };
      case "array":
        return { kind: "tuple", items: node.items.map((item) => this.expr(item)), text, at, syntax: "json" };
      case "object":
        return {
          kind: "object",
          items: node.entries.map((e) => ({
            key: { kind: "literal", value: e.key, text: e.key, at: this.pos(e.keyStart), syntax: "json" },
            keyName: e.key,
            value: this.expr(e.value),
          })),
          text,
          at,
          syntax: "json",
        };
    }
  }

  private fail(node: JsonNode, message: string): never {
    throw new ModuleParseError({ ...this.pos(node.start), message });
  }
}

/** The references inside a JSON string's `${…}` interpolations (best effort: no HCL parse). */
export function templateReferences(template: string, at: Position): Traversal[] {
  const out: Traversal[] = [];
  const interpolation = /(?<![$%])[$%]\{([^}]*)\}/g;
  for (const match of template.matchAll(interpolation)) {
    const inner = match[1]!.replace(/"(?:[^"\\]|\\.)*"/g, '""');
    for (const ref of inner.matchAll(/(?<![\w.-])([A-Za-z_][\w-]*)((?:\.[A-Za-z_][\w-]*)*)/g)) {
      const attrs = ref[2] ? ref[2].slice(1).split(".") : [];
      out.push({ root: ref[1]!, attrs, at });
    }
  }
  return out;
}
