// The syntax-neutral model of a module's files: native HCL (read by hcl-parser.ts) and JSON syntax
// both become these plain objects, so every check is a pure function over data.

/** A 1-based position in a module file, relative to the module root. */
export interface Position {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** One step after a traversal's root: `.name`, `[index]` or a splat. */
export type TraversalStep =
  | { readonly kind: "attr"; readonly name: string }
  | { readonly kind: "index"; readonly key: Expr }
  | { readonly kind: "splat" };

/** An expression, as far as the checks need to read it; `text` is its source as written. */
export type Expr = (
  | { readonly kind: "literal"; readonly value: string | number | boolean | null }
  /** A quoted string or heredoc with interpolations; `parts` are its literal chunks and interpolated expressions. */
  | { readonly kind: "template"; readonly parts: readonly Expr[] }
  | { readonly kind: "traversal"; readonly root: string; readonly steps: readonly TraversalStep[] }
  /** Steps applied to something other than a name, e.g. `f(x).y` or `(a)[0]`. */
  | { readonly kind: "relative"; readonly source: Expr; readonly steps: readonly TraversalStep[] }
  | { readonly kind: "call"; readonly name: string; readonly args: readonly Expr[] }
  | { readonly kind: "tuple"; readonly items: readonly Expr[] }
  | { readonly kind: "object"; readonly items: readonly ObjectItem[] }
  | { readonly kind: "for"; readonly collection: Expr; readonly key?: Expr; readonly value: Expr; readonly condition?: Expr }
  | { readonly kind: "conditional"; readonly condition: Expr; readonly whenTrue: Expr; readonly whenFalse: Expr }
  | { readonly kind: "parens"; readonly inner: Expr }
  | { readonly kind: "operation"; readonly operator: string; readonly operands: readonly Expr[] }
  /** A JSON-syntax string holding `${…}`: its references are known, its structure is not. */
  | { readonly kind: "json-template"; readonly references: readonly Traversal[] }
  | { readonly kind: "unknown" }
) & { readonly text: string; readonly at: Position; readonly syntax: Syntax };

export interface ObjectItem {
  readonly key: Expr;
  /** The key as a name, when it is a bare identifier or a literal string. */
  readonly keyName: string | undefined;
  readonly value: Expr;
}

/** A reference such as `var.captf_tags` or `data.x.y`, with where it appears. */
export interface Traversal {
  readonly root: string;
  /** The attribute names after the root, up to the first index or splat. */
  readonly attrs: readonly string[];
  readonly at: Position;
}

export type Syntax = "native" | "json";

export interface Attribute {
  readonly name: string;
  readonly at: Position;
  readonly expr: Expr;
}

export interface Block {
  readonly type: string;
  readonly labels: readonly string[];
  readonly at: Position;
  readonly body: Body;
  readonly syntax: Syntax;
}

export interface Body {
  readonly attributes: readonly Attribute[];
  readonly blocks: readonly Block[];
}

/** One parsed file: its top-level body and its comments (for suppressions). */
export interface ParsedFile {
  /** Relative to the module directory it belongs to. */
  readonly name: string;
  readonly body: Body;
  readonly comments: readonly Comment[];
  readonly syntax: Syntax;
}

export interface Comment {
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

/** A parse failure, with the parser's position. */
export interface ParseFailure {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

/**
 * Deepest nesting of blocks, expressions and JSON values the parsers read: deeper input is a
 * parse error at the level that crosses it, never a stack overflow (a
 * level costs the parser and the checks several frames). Real modules nest a few dozen at most.
 */
export const maxNesting = 256;

/** The parse error of input nested deeper than {@link maxNesting}. */
export const tooDeepMessage = `nested more than ${maxNesting} levels deep; tfcapi-lint reads at most ${maxNesting}`;

export class ModuleParseError extends Error {
  constructor(readonly failure: ParseFailure) {
    super(`${failure.file}:${failure.line}:${failure.column}: ${failure.message}`);
    this.name = "ModuleParseError";
  }
}
