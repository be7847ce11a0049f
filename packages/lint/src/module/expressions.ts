// Walking the expression model: every sub-expression, every reference, every attribute of a body.
import type { Attribute, Body, Expr, Traversal, TraversalStep } from "./model.js";

const noExprs: readonly Expr[] = [];

/** Calls `visit` on `expr` and each expression inside it, depth first. */
export function walkExpr(expr: Expr, visit: (e: Expr) => void): void {
  visit(expr);
  for (const child of childExprs(expr)) walkExpr(child, visit);
}

function childExprs(expr: Expr): readonly Expr[] {
  switch (expr.kind) {
    case "template":
      return expr.parts;
    case "traversal":
      return indexKeys(expr.steps);
    case "relative":
      return [expr.source, ...indexKeys(expr.steps)];
    case "call":
      return expr.args;
    case "tuple":
      return expr.items;
    case "object": {
      const keysAndValues: Expr[] = [];
      for (const item of expr.items) keysAndValues.push(item.key, item.value);
      return keysAndValues;
    }
    case "for":
      return [expr.collection, ...(expr.key ? [expr.key] : []), expr.value, ...(expr.condition ? [expr.condition] : [])];
    case "conditional":
      return [expr.condition, expr.whenTrue, expr.whenFalse];
    case "parens":
      return [expr.inner];
    case "operation":
      return expr.operands;
    default:
      return noExprs;
  }
}

/** The keys of a traversal's index steps; most traversals have none, and share one empty array. */
function indexKeys(steps: readonly TraversalStep[]): readonly Expr[] {
  let keys: Expr[] | undefined;
  for (const step of steps) if (step.kind === "index") (keys ??= []).push(step.key);
  return keys ?? noExprs;
}

/** Every reference (`var.x`, `local.y`, …) `expr` makes. */
export function referencesOf(expr: Expr): Traversal[] {
  const out: Traversal[] = [];
  collectReferences(expr, out);
  return out;
}

/**
 * Pushes the references of `expr` onto `out` in {@link walkExpr}'s order, without its per-node arrays: the loader does this for
 * every argument.
 */
export function collectReferences(expr: Expr, out: Traversal[]): void {
  switch (expr.kind) {
    case "traversal": {
      const attrs: string[] = [];
      for (const step of expr.steps) {
        if (step.kind !== "attr") break;
        attrs.push(step.name);
      }
      out.push({ root: expr.root, attrs, at: expr.at });
      for (const step of expr.steps) if (step.kind === "index") collectReferences(step.key, out);
      return;
    }
    case "json-template":
      for (const r of expr.references) out.push(r);
      return;
    case "relative":
      collectReferences(expr.source, out);
      for (const step of expr.steps) if (step.kind === "index") collectReferences(step.key, out);
      return;
    case "object":
      for (const item of expr.items) {
        collectReferences(item.key, out);
        collectReferences(item.value, out);
      }
      return;
    default:
      for (const child of childExprs(expr)) collectReferences(child, out);
  }
}

/** Every attribute of `body` and of its nested blocks, depth first. */
export function allAttributes(body: Body): Attribute[] {
  const out: Attribute[] = [...body.attributes];
  for (const block of body.blocks) out.push(...allAttributes(block.body));
  return out;
}

/** Whether `expr` references `root.attr` (e.g. `var.autoscaling`). */
export function exprReferences(expr: Expr, root: string, attr: string): boolean {
  return referencesOf(expr).some((t) => t.root === root && t.attrs[0] === attr);
}

/** Whitespace runs collapsed to one space: two formattings of the same source compare equal. */
export function collapseWhitespace(text: string): string {
  return text.trim().split(/\s+/).join(" ");
}

/** A body's comparable signature: attributes as name=source, nested blocks recursively, sorted. */
export function bodySignature(body: Body): string {
  const parts = body.attributes.map((a) => `${a.name}=${collapseWhitespace(a.expr.text)}`);
  for (const block of body.blocks) parts.push(`${block.type} ${block.labels.join(" ")}{${bodySignature(block.body)}}`);
  return parts.sort().join(";");
}

/** The string value of a literal (or a parenthesised one), else undefined. */
export function literalString(expr: Expr | undefined): string | undefined {
  if (!expr) return undefined;
  if (expr.kind === "parens") return literalString(expr.inner);
  if (expr.kind === "literal" && typeof expr.value === "string") return expr.value;
  if (expr.kind === "template" && expr.parts.every((p) => p.kind === "literal")) {
    return expr.parts.map((p) => (p.kind === "literal" ? String(p.value) : "")).join("");
  }
  return undefined;
}
