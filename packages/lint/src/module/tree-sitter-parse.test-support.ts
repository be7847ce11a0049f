// The tree-sitter reader tfcapi-lint used before hcl-parser.ts, kept as the reference the
// differential test holds the hand-written parser to. Not part of the build.
import { createRequire } from "node:module";
import { Language, Parser, type Node } from "web-tree-sitter";
import {
  ModuleParseError,
  type Attribute,
  type Block,
  type Body,
  type Comment,
  type Expr,
  type ObjectItem,
  type ParsedFile,
  type Position,
  type TraversalStep,
} from "./model.js";

let parserPromise: Promise<Parser> | undefined;

/** The one tree-sitter parser of this process: the WASM runtime and grammar load once. */
function hclParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    await Parser.init();
    const wasm = createRequire(import.meta.url).resolve("@tree-sitter-grammars/tree-sitter-hcl/tree-sitter-terraform.wasm");
    const language = await Language.load(wasm);
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  return parserPromise;
}

/** Parses one native-syntax file; throws {@link ModuleParseError} with the first error's position. */
export async function parseWithTreeSitter(name: string, source: string): Promise<ParsedFile> {
  const parser = await hclParser();
  const tree = parser.parse(source);
  if (!tree) throw new ModuleParseError({ file: name, line: 1, column: 1, message: "the parser returned no tree" });
  try {
    const root = tree.rootNode;
    if (root.hasError) throw new ModuleParseError(describeSyntaxError(name, root));
    const converter = new Converter(name, source);
    let body: Body = { attributes: [], blocks: [] };
    for (const child of root.namedChildren) {
      if (child?.type === "body") body = converter.body(child);
      else if (child?.type === "object") {
        throw new ModuleParseError({ ...converter.pos(child), message: "a .tf file holds blocks and arguments, not a bare object" });
      }
    }
    const comments: Comment[] = [];
    // Comments matter only for suppressions; walking every node for them is the costliest step.
    if (source.includes("tfcapi-lint:ignore")) {
      for (const node of root.descendantsOfType("comment")) {
        if (node) comments.push({ line: node.startPosition.row + 1, column: node.startPosition.column + 1, text: node.text });
      }
    }
    return { name, body, comments, syntax: "native" };
  } finally {
    tree.delete();
  }
}

function describeSyntaxError(file: string, root: Node): { file: string; line: number; column: number; message: string } {
  const bad = firstError(root) ?? root;
  const at = { file, line: bad.startPosition.row + 1, column: bad.startPosition.column + 1 };
  if (bad.isMissing) return { ...at, message: `syntax error: missing ${describeToken(bad.type)}` };
  const snippet = bad.text.split("\n")[0]!.trim().slice(0, 40);
  return { ...at, message: snippet ? `syntax error: unexpected ${JSON.stringify(snippet)}` : "syntax error" };
}

function firstError(node: Node): Node | undefined {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (child && (child.hasError || child.isMissing || child.isError)) {
      const found = firstError(child);
      if (found) return found;
    }
  }
  return node.isError ? node : undefined;
}

function describeToken(type: string): string {
  const names: Record<string, string> = { block_end: '"}"', object_end: '"}"', tuple_end: '"]"', quoted_template_end: "a closing quote" };
  return names[type] ?? (/^[a-z_]+$/.test(type) ? type.replace(/_/g, " ") : JSON.stringify(type));
}

const stepTypes = new Set(["get_attr", "index", "splat"]);

/**
 * Converts one file's syntax tree; holds the file name and source for positions and text.
 * Every `type`, `isNamed` and `endIndex` read of a web-tree-sitter node is a call into WASM:
 * each is read once per node into a local. Expressions are built as plain object literals, not
 * `{ ...base, … }`: V8's object spread is many times slower, and there is one per expression.
 */
class Converter {
  constructor(
    private readonly file: string,
    private readonly source: string,
  ) {}

  /** The node's source; its indexes are UTF-16 code units (web-tree-sitter parses JS strings as UTF-16). */
  private text(node: Node): string {
    return this.source.slice(node.startIndex, node.endIndex);
  }

  pos(node: Node): Position {
    return { file: this.file, line: node.startPosition.row + 1, column: node.startPosition.column + 1 };
  }

  body(node: Node): Body {
    const attributes: Attribute[] = [];
    const blocks: Block[] = [];
    const seen = new Set<string>();
    for (const child of node.namedChildren) {
      if (!child) continue;
      const type = child.type;
      if (type === "attribute") {
        const attribute = this.attribute(child);
        if (seen.has(attribute.name)) {
          throw new ModuleParseError({ ...attribute.at, message: `argument ${attribute.name} is set twice in the same block` });
        }
        seen.add(attribute.name);
        attributes.push(attribute);
      } else if (type === "block") {
        blocks.push(this.block(child));
      }
    }
    return { attributes, blocks };
  }

  private attribute(node: Node): Attribute {
    const name = node.namedChildren.find((c) => c?.type === "identifier")!;
    const value = node.namedChildren.find((c) => c?.type === "expression")!;
    return { name: this.text(name), at: this.pos(name), expr: this.expression(value) };
  }

  private block(node: Node): Block {
    let type = "";
    const labels: string[] = [];
    let body: Body = { attributes: [], blocks: [] };
    for (const child of node.namedChildren) {
      if (!child) continue;
      const childType = child.type;
      if (childType === "identifier") {
        if (type === "") type = this.text(child);
        else labels.push(this.text(child));
      } else if (childType === "string_lit") {
        labels.push(stringLiteralValue(child));
      } else if (childType === "body") {
        body = this.body(child);
      }
    }
    return { type, labels, at: this.pos(node), body, syntax: "native" };
  }

  expression(node: Node): Expr {
    return this.sequence(
      node,
      node.children.filter((c): c is Node => c !== null),
    );
  }

  /** A flat run of children (tree-sitter inlines terms): a head, then its traversal steps, or an operation. */
  private sequence(owner: Node, children: Node[]): Expr {
    const terms: { expr: Expr; start: number }[] = [];
    const operators: string[] = [];
    const slice = (start: number, end: number): string => this.source.slice(start, end);
    const types = children.map((c) => c.type);
    const named = children.map((c) => c.isNamed);
    let i = 0;
    while (i < children.length) {
      const child = children[i]!;
      if (!named[i] && types[i] === "(") {
        const inner = children[i + 1]!;
        const close = children[i + 2] ?? inner;
        const expr: Expr = {
          kind: "parens",
          inner: this.expression(inner),
          text: slice(child.startIndex, close.endIndex),
          at: this.pos(child),
          syntax: "native",
        };
        terms.push({ expr, start: child.startIndex });
        i += 3;
      } else if (!named[i]) {
        operators.push(types[i]!);
        i += 1;
      } else if (stepTypes.has(types[i]!) && terms.length > 0) {
        const { expr: head, start } = terms.pop()!;
        const steps: TraversalStep[] = [];
        let end = child;
        while (i < children.length && stepTypes.has(types[i]!)) {
          end = children[i]!;
          steps.push(...this.steps(end, types[i]!));
          i += 1;
        }
        const text = slice(start, end.endIndex);
        const expr: Expr =
          head.kind === "traversal"
            ? { text, at: head.at, syntax: head.syntax, kind: "traversal", root: head.root, steps: [...head.steps, ...steps] }
            : { kind: "relative", source: head, steps, text, at: head.at, syntax: "native" };
        terms.push({ expr, start });
      } else {
        terms.push({ expr: this.term(child, types[i]!), start: child.startIndex });
        i += 1;
      }
    }
    if (terms.length === 1 && operators.length === 0) return terms[0]!.expr;
    return {
      kind: "operation",
      operator: operators.join(" "),
      operands: terms.map((t) => t.expr),
      text: this.text(owner),
      at: this.pos(owner),
      syntax: "native",
    };
  }

  private steps(node: Node, type: string): TraversalStep[] {
    switch (type) {
      case "get_attr":
        return [{ kind: "attr", name: this.text(node.namedChildren.find((c) => c?.type === "identifier")!) }];
      case "index": {
        const index = node.namedChildren[0]!;
        if (index.type === "legacy_index") {
          const digits = this.text(index).replace(/^\./, "");
          return [{ kind: "index", key: { kind: "literal", value: Number(digits), text: digits, at: this.pos(index), syntax: "native" } }];
        }
        const key = index.namedChildren.find((c) => c?.type === "expression")!;
        return [{ kind: "index", key: this.expression(key) }];
      }
      default: {
        const inner = node.namedChildren[0];
        const rest = inner ? inner.namedChildren.filter((c): c is Node => c !== null).flatMap((c) => this.steps(c, c.type)) : [];
        return [{ kind: "splat" }, ...rest];
      }
    }
  }

  private term(node: Node, type: string): Expr {
    if (type === "expression") return this.expression(node);
    const text = this.text(node);
    const at = this.pos(node);
    switch (type) {
      case "literal_value":
        return { text, at, syntax: "native", kind: "literal", value: literalValue(node.namedChildren[0]!) };
      case "template_expr":
        return { text, at, syntax: "native", kind: "template", parts: this.templateParts(node.namedChildren[0]!) };
      case "collection_value":
        return this.collection(node.namedChildren[0]!);
      case "variable_expr":
        return { text, at, syntax: "native", kind: "traversal", root: text, steps: [] };
      case "function_call": {
        const name = this.text(node.namedChildren.find((c) => c?.type === "identifier")!);
        const args = node.namedChildren.find((c) => c?.type === "function_arguments");
        const exprs = args ? args.namedChildren.filter((c): c is Node => c?.type === "expression").map((c) => this.expression(c)) : [];
        return { text, at, syntax: "native", kind: "call", name, args: exprs };
      }
      case "for_expr":
        return this.forExpression(node.namedChildren[0]!);
      case "operation": {
        const op = node.namedChildren[0]!;
        return {
          ...this.sequence(
            op,
            op.children.filter((c): c is Node => c !== null),
          ),
          text,
          at,
        };
      }
      case "conditional": {
        const parts = node.namedChildren.filter((c): c is Node => c?.type === "expression").map((c) => this.expression(c));
        return { text, at, syntax: "native", kind: "conditional", condition: parts[0]!, whenTrue: parts[1]!, whenFalse: parts[2]! };
      }
      default:
        return { text, at, syntax: "native", kind: "unknown" };
    }
  }

  private collection(node: Node): Expr {
    const text = this.text(node);
    const at = this.pos(node);
    if (node.type === "tuple") {
      const items = node.namedChildren.filter((c): c is Node => c?.type === "expression").map((c) => this.expression(c));
      return { text, at, syntax: "native", kind: "tuple", items };
    }
    const items: ObjectItem[] = [];
    for (const elem of node.namedChildren) {
      if (elem?.type !== "object_elem") continue;
      const key = this.expression(elem.childForFieldName("key")!);
      const value = this.expression(elem.childForFieldName("val")!);
      items.push({ key, keyName: keyName(key), value });
    }
    return { text, at, syntax: "native", kind: "object", items };
  }

  private forExpression(node: Node): Expr {
    const intro = node.namedChildren.find((c) => c?.type === "for_intro")!;
    const collection = this.expression(intro.namedChildren.find((c) => c?.type === "expression")!);
    const bodies = node.namedChildren.filter((c): c is Node => c?.type === "expression").map((c) => this.expression(c));
    const cond = node.namedChildren.find((c) => c?.type === "for_cond");
    const condition = cond ? this.expression(cond.namedChildren.find((c) => c?.type === "expression")!) : undefined;
    const key = bodies.length > 1 ? bodies[0] : undefined;
    const value = bodies[bodies.length - 1]!;
    return {
      text: this.text(node),
      at: this.pos(node),
      syntax: "native",
      kind: "for",
      collection,
      ...(key ? { key } : {}),
      value,
      ...(condition ? { condition } : {}),
    };
  }

  private templateParts(node: Node): Expr[] {
    const parts: Expr[] = [];
    const visit = (n: Node): void => {
      for (const child of n.namedChildren) {
        if (!child) continue;
        const type = child.type;
        if (type === "template_literal") {
          const text = this.text(child);
          parts.push({ kind: "literal", value: unescapeTemplate(text), text, at: this.pos(child), syntax: "native" });
        } else if (type === "expression") {
          parts.push(this.expression(child));
        } else {
          visit(child);
        }
      }
    };
    visit(node);
    return parts;
  }
}

function keyName(key: Expr): string | undefined {
  if (key.kind === "traversal" && key.steps.length === 0) return key.root;
  if (key.kind === "literal" && typeof key.value === "string") return key.value;
  if (key.kind === "parens") return keyName(key.inner);
  return undefined;
}

function literalValue(node: Node): string | number | boolean | null {
  switch (node.type) {
    case "numeric_lit":
      return Number(node.text);
    case "bool_lit":
      return node.text === "true";
    case "null_lit":
      return null;
    default:
      return stringLiteralValue(node);
  }
}

function stringLiteralValue(node: Node): string {
  const literal = node.namedChildren.find((c) => c?.type === "template_literal");
  return literal ? unescapeTemplate(literal.text) : "";
}

const escapes: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" };

/** The value of a quoted string's literal chunk: HCL escapes and the `$${`/`%%{` doubling undone. */
function unescapeTemplate(raw: string): string {
  return raw
    .replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (whole, code: string) => {
      if (code.length > 1) return String.fromCodePoint(parseInt(code.slice(1), 16));
      return escapes[code] ?? whole;
    })
    .replace(/\$\$\{/g, "${")
    .replace(/%%\{/g, "%{");
}
