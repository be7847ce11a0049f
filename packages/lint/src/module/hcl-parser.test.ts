import { describe, expect, it } from "@jest/globals";
import { parseHclFile } from "./hcl-parser.js";
import { parseJsonFile } from "./json-parse.js";
import { maxNesting, ModuleParseError, type Expr, type ParseFailure } from "./model.js";

/** The expression of the first argument of `source`. */
function expr(source: string): Expr {
  return parseHclFile("m.tf", source).body.attributes[0]!.expr;
}

function failure(source: string): ParseFailure {
  try {
    parseHclFile("m.tf", source);
  } catch (error) {
    if (error instanceof ModuleParseError) return error.failure;
    throw error;
  }
  throw new Error("parsed without an error");
}

/** A template's parts as [kind, value or text] pairs. */
function parts(e: Expr): [string, unknown][] {
  if (e.kind !== "template") throw new Error(`not a template: ${e.kind}`);
  return e.parts.map((p) => [p.kind, p.kind === "literal" ? p.value : p.text]);
}

describe("parseHclFile", () => {
  it.each<[string, string, string]>([
    ["lists", "[", "]"],
    ["objects", "{ a = ", " }"],
    ["parentheses", "(", ")"],
    ["templates", '"${', '}"'],
    ["calls", "max(", ")"],
    ["unary minus", "-", ""],
  ])("reads %s nested to the limit, and refuses deeper ones as a parse error instead of overflowing the stack", (_, open, close) => {
    const nested = (depth: number) => `a = ${open.repeat(depth)}1${close.repeat(depth)}\n`;
    expect(() => parseHclFile("m.tf", nested(maxNesting - 1))).not.toThrow();
    expect(failure(nested(maxNesting)).message).toContain("nested more than");
    expect(failure(nested(100_000))).toMatchObject({
      file: "m.tf",
      line: 1,
      message: `syntax error: nested more than ${maxNesting} levels deep; tfcapi-lint reads at most ${maxNesting}`,
    });
  });

  it("refuses blocks nested past the limit at the block that crosses it", () => {
    expect(() => parseHclFile("m.tf", "b {\n".repeat(maxNesting) + "}\n".repeat(maxNesting))).not.toThrow();
    expect(failure("b {\n".repeat(100_000))).toMatchObject({
      line: maxNesting + 1,
      column: 3,
      message: expect.stringContaining("nested more than"),
    });
  });

  it("refuses JSON nested past the limit as a parse error", () => {
    const deep = (depth: number) => `{"locals": {"a": ${"[".repeat(depth)}1${"]".repeat(depth)}}}`;
    expect(() => parseJsonFile("m.tf.json", deep(maxNesting - 2))).not.toThrow();
    expect(() => parseJsonFile("m.tf.json", deep(maxNesting - 1))).toThrow(/invalid JSON: nested more than/);
    expect(() => parseJsonFile("m.tf.json", deep(100_000))).toThrow(/invalid JSON: nested more than/);
  });

  it("chains conditionals to the right, as HCL does (tree-sitter-hcl chained them to the left)", () => {
    const e = expr("a = x ? 1 : y ? 2 : 3\n");
    expect(e).toMatchObject({
      kind: "conditional",
      condition: { text: "x" },
      whenTrue: { text: "1" },
      whenFalse: { kind: "conditional", text: "y ? 2 : 3" },
    });
  });

  it("keeps the blanks at the ends of literal chunks (tree-sitter-hcl dropped them)", () => {
    expect(expr('a = " x "\n')).toMatchObject({ kind: "literal", value: " x " });
    expect(parts(expr('a = "${a}, ${b} "\n'))).toEqual([
      ["traversal", "a"],
      ["literal", ", "],
      ["traversal", "b"],
      ["literal", " "],
    ]);
    expect(parseHclFile("m.tf", 'resource " a" "b " {}\n').body.blocks[0]!.labels).toEqual([" a", "b "]);
  });

  it("gives every expression its source text and 1-based position, columns in UTF-16 units", () => {
    const e = expr('\n  a = ["é😀", f(x.y[0])]\n');
    expect(e).toMatchObject({ kind: "tuple", text: '["é😀", f(x.y[0])]', at: { file: "m.tf", line: 2, column: 7 } });
    expect(e.kind === "tuple" && e.items[1]).toMatchObject({ kind: "call", name: "f", text: "f(x.y[0])", at: { line: 2, column: 15 } });
  });

  it("reads operators by HCL's precedence, left to right", () => {
    const e = expr("a = 1 + 2 * 3 - 4 == 5 || !b && c\n");
    const shape = (x: Expr): unknown => (x.kind === "operation" ? [x.operator, ...x.operands.map(shape)] : x.text);
    expect(shape(e)).toEqual(["||", ["==", ["-", ["+", "1", ["*", "2", "3"]], "4"], "5"], ["&&", ["!", "b"], "c"]]);
  });

  it("reads numbers with fractions and exponents, and digits after a dot as an index", () => {
    expect(expr("a = 1.5e3\n")).toMatchObject({ kind: "literal", value: 1500 });
    expect(expr("a = x.0.1\n")).toMatchObject({
      kind: "traversal",
      steps: [
        { kind: "index", key: { value: 0 } },
        { kind: "index", key: { value: 1 } },
      ],
    });
  });

  it("reads template directives, their expressions in order, and strip markers", () => {
    expect(parts(expr('a = "%{ if x }yes%{ else }no%{ endif } %{ for k, v in m ~}  ${v} %{~ endfor }"\n'))).toEqual([
      ["traversal", "x"],
      ["literal", "yes"],
      ["literal", "no"],
      ["literal", " "],
      ["traversal", "m"],
      ["literal", ""],
      ["traversal", "v"],
      ["literal", ""],
    ]);
  });

  it("reads heredocs: their lines as written, interpolations, and <<- indentation removed", () => {
    const plain = expr("a = <<EOT\n  one ${x}\n    two \\n $${y}\nEOT\nb = 1\n");
    expect(parts(plain)).toEqual([
      ["literal", "  one "],
      ["traversal", "x"],
      ["literal", "\n    two \\n ${y}\n"],
    ]);
    expect(plain).toMatchObject({ text: "<<EOT\n  one ${x}\n    two \\n $${y}\nEOT", at: { line: 1, column: 5 } });
    const flush = expr("a = <<-EOT\n    one\n\n      two ${x}\n    EOT\n");
    expect(parts(flush)).toEqual([
      ["literal", "one\n\n  two "],
      ["traversal", "x"],
      ["literal", "\n"],
    ]);
    expect(expr("a = trimspace(<<-EOT\n  x\n  EOT\n)\n")).toMatchObject({ kind: "call", args: [{ kind: "template" }] });
  });

  it("reads object keys as names, and for expressions with and without keys", () => {
    const object = expr('a = { b = 1, "c" : 2, (d) = 3 }\n');
    expect(object.kind === "object" && object.items.map((i) => i.keyName)).toEqual(["b", "c", "d"]);
    expect(expr("a = { for k, v in m : k => v... if v }\n")).toMatchObject({
      kind: "for",
      key: { text: "k" },
      value: { text: "v" },
      condition: { text: "v" },
    });
    expect(expr("a = [for x in m : x]\n")).not.toHaveProperty("key");
    expect(expr("a = [for, x]\n")).toMatchObject({ kind: "tuple", items: [{ text: "for" }, { text: "x" }] });
  });

  it("keeps comments only in a file that holds a suppression, with their positions", () => {
    expect(parseHclFile("m.tf", "# one\na = 1\n").comments).toEqual([]);
    const source = '# tfcapi-lint:ignore a b\na = "# not a comment" // two\n/* three\n*/ b = 2\n';
    expect(parseHclFile("m.tf", source).comments).toEqual([
      { line: 1, column: 1, text: "# tfcapi-lint:ignore a b" },
      { line: 2, column: 23, text: "// two" },
      { line: 3, column: 1, text: "/* three\n*/" },
    ]);
    expect(parseHclFile("m.tf", source).body.attributes[1]).toMatchObject({ name: "b", at: { line: 4, column: 4 } });
  });

  it.each([
    ['a = "x\n"\n', 1, 7, "syntax error: missing a closing quote"],
    ['a = "%{ if x }y"\n', 1, 9, "syntax error: this %{ if } has no %{ endif }"],
    ['a = "%{ endfor }"\n', 1, 9, 'syntax error: unexpected "endfor", expected if or for'],
    ["a = <<EOT\nx\n", 2, 1, "syntax error: missing the heredoc's end marker EOT"],
    ["a = << EOT\nx\nEOT\n", 1, 5, "syntax error: a heredoc needs a marker right after <<, such as <<EOT"],
    ["a = 1\n/* open\n", 2, 1, 'syntax error: missing "*/" to close this comment'],
    ["{\n}\n", 1, 1, "a .tf file holds blocks and arguments, not a bare object"],
    ['resource "a${x}" "b" {}\n', 1, 10, "syntax error: a block label is a plain string, without ${…} or %{…}"],
    ["a = 1\nb = 2\na = 3\n", 3, 1, "argument a is set twice in the same block"],
    ["a = 1\na = 2\nb = (\n", 4, 1, "syntax error: unexpected end of file, expected an expression"],
    ["a = x.\n", 2, 1, 'syntax error: unexpected end of file, expected an attribute name after "."'],
    ["a = [for x y]\n", 1, 12, 'syntax error: unexpected "y", expected "in"'],
    ["a = $x\n", 1, 5, 'syntax error: unexpected "$"'],
  ])("rejects %j at %d:%d", (source, line, column, message) => {
    expect(failure(source)).toEqual({ file: "m.tf", line, column, message });
  });
});
