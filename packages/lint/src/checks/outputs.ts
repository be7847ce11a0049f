// The output/* checks: declared contract outputs, reserved names, and the shapes of two expressions.
import { reservedInputPrefix, roleTables } from "@captf/contract/roles";
import { at, moduleWide, type Finding } from "../findings.js";
import { walkExpr } from "../module/expressions.js";
import type { Expr, TraversalStep } from "../module/model.js";
import { config, expressions, type CheckContext } from "./context.js";
import { checkIds } from "./ids.js";

const healthOutput = "health";
const providerIdList = "provider_id_list";

export function outputRequired(ctx: CheckContext): Finding[] {
  const outputs = config(ctx).outputs;
  return roleTables[ctx.role].outputs
    .filter((spec) => spec.name !== healthOutput && spec.name !== providerIdList && !outputs.has(spec.name))
    .map((spec) =>
      moduleWide(
        checkIds.outputRequired,
        "error",
        `contract output ${spec.name} is not declared`,
        `add output "${spec.name}" (decoded as ${spec.type})`,
      ),
    );
}

export function outputHealth(ctx: CheckContext): Finding[] {
  if (config(ctx).outputs.has(healthOutput)) return [];
  return [
    moduleWide(
      checkIds.outputHealth,
      "error",
      `output ${healthOutput} is not declared: every module must report its health`,
      `add output "${healthOutput}" { value = { state = "running", healthy = true } } or derive it from the infrastructure`,
    ),
  ];
}

export function outputReserved(ctx: CheckContext): Finding[] {
  return [...config(ctx).outputs.values()]
    .filter((o) => o.name.startsWith(reservedInputPrefix))
    .map((o) =>
      at(
        o.at,
        checkIds.outputReserved,
        "warning",
        `output ${o.name} uses the ${reservedInputPrefix} prefix, which the contract reserves`,
        `rename output ${o.name} without the ${reservedInputPrefix} prefix`,
      ),
    );
}

export function outputEndpointNeverSet(ctx: CheckContext): Finding[] {
  const output = expressions(ctx).outputs.get("control_plane_endpoint");
  if (!output?.value || !isNullLiteral(output.value)) return [];
  return [
    at(
      output.at,
      checkIds.outputEndpointNeverSet,
      "warning",
      "output control_plane_endpoint is always null: a cluster without a user-set endpoint never gets one",
      "set control_plane_endpoint to the load balancer's {host, port}, or to var.control_plane_endpoint when the module creates none",
    ),
  ];
}

function isNullLiteral(expr: Expr): boolean {
  if (expr.kind === "parens") return isNullLiteral(expr.inner);
  return expr.kind === "literal" && expr.value === null;
}

/** The declaration half of output/provider-id-list-shape: a pool must declare the list. */
export function outputProviderIdListDeclared(ctx: CheckContext): Finding[] {
  if (config(ctx).outputs.has(providerIdList)) return [];
  return [
    moduleWide(
      checkIds.outputProviderIdListShape,
      "error",
      `output ${providerIdList} is not declared: a pool reports every non-terminated member`,
      `add output "${providerIdList}" { value = sort([...]) } listing every member's provider ID`,
    ),
  ];
}

const statusWords = new Set(["running", "healthy"]);

function isStatusWord(text: string): boolean {
  return statusWords.has(text.trim().toLowerCase());
}

function stepIsStatus(step: TraversalStep): boolean {
  if (step.kind === "attr") return isStatusWord(step.name);
  return step.kind === "index" && step.key.kind === "literal" && typeof step.key.value === "string" && isStatusWord(step.key.value);
}

/** Whether a `for` condition compares against a status word: a literal, or an attribute or index named for one. */
function filtersOnStatus(condition: Expr): boolean {
  let found = false;
  walkExpr(condition, (e) => {
    if (e.kind === "literal" && typeof e.value === "string" && isStatusWord(e.value)) found = true;
    if ((e.kind === "traversal" || e.kind === "relative") && e.steps.some(stepIsStatus)) found = true;
  });
  return found;
}

/** Whether `expr` yields a list in a deterministic order: sort(), or something that keeps a sorted list sorted. */
export function isSorted(expr: Expr): boolean {
  switch (expr.kind) {
    case "parens":
      return isSorted(expr.inner);
    case "conditional":
      return isSorted(expr.whenTrue) && isSorted(expr.whenFalse);
    case "call":
      if (expr.name === "sort") return true;
      if (expr.name === "tolist" || expr.name === "distinct") return expr.args.length === 1 && isSorted(expr.args[0]!);
      if (expr.name === "concat") return expr.args.length > 0 && expr.args.every(isSorted);
      return false;
    default:
      return false;
  }
}

/** The expression half of output/provider-id-list-shape, native syntax only: no status filter, sorted. */
export function outputProviderIdListShape(ctx: CheckContext): Finding[] {
  const output = expressions(ctx).outputs.get(providerIdList);
  const value = output?.value;
  if (!output || !value || value.syntax !== "native") return [];
  const out: Finding[] = [];
  walkExpr(value, (e) => {
    if (e.kind === "for" && e.condition && filtersOnStatus(e.condition)) {
      out.push(
        at(
          output.at,
          checkIds.outputProviderIdListShape,
          "warning",
          `output ${providerIdList} filters on health or state: it must list every non-terminated member`,
          "drop the running/healthy filter: report unhealthy members through health, not by hiding them",
        ),
      );
    }
  });
  if (!isSorted(value)) {
    out.push(
      at(
        output.at,
        checkIds.outputProviderIdListShape,
        "warning",
        `output ${providerIdList} is not sorted with sort(): its order churns between runs`,
        "wrap the list in sort(...)",
      ),
    );
  }
  return out;
}
