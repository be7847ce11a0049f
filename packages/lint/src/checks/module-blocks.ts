// The module/* checks: blocks the generated root owns, escaping sources, literal credentials,
// the runtime version constraint, and .tofu files that change what OpenTofu loads.
import { at, moduleWide, type Finding } from "../findings.js";
import { allAttributes, exprReferences } from "../module/expressions.js";
import { expressionSet, type LoadedModule } from "../module/load.js";
import type { Block, Expr } from "../module/model.js";
import { config, inEveryModule, type CheckContext } from "./context.js";
import { checkIds } from "./ids.js";

export function moduleVersion(ctx: CheckContext): Finding[] {
  if (config(ctx).requiredVersion) return [];
  return [
    moduleWide(
      checkIds.moduleVersion,
      "info",
      "no required_version: say which runtime versions the module was tested with",
      'add terraform { required_version = ">= 1.5.0" } with the oldest runtime you test',
    ),
  ];
}

export const moduleBackend = inEveryModule((m) =>
  expressionSet(m).backends.map((b) =>
    at(
      b.at,
      checkIds.moduleBackend,
      "error",
      `terraform { backend "${b.labels[0] ?? ""}" } in the module: the generated root owns the backend`,
      "delete the backend block; captf stores state in its own kubernetes backend",
    ),
  ),
);

export const moduleCloud = inEveryModule((m) =>
  expressionSet(m).clouds.map((b) =>
    at(
      b.at,
      checkIds.moduleCloud,
      "error",
      "terraform { cloud } in the module: state lives in the generated root's backend",
      "delete the cloud block",
    ),
  ),
);

export const moduleSourceEscape = inEveryModule((m) => [...m.escapes]);

/** Argument names (compared case-insensitively) that hold credentials. */
export const credentialNames = new Set([
  "access_key",
  "secret_key",
  "secret_access_key",
  "session_token",
  "token",
  "access_token",
  "auth_token",
  "bearer_token",
  "api_token",
  "api_key",
  "apikey",
  "password",
  "passphrase",
  "client_secret",
  "client_certificate",
  "client_certificate_password",
  "client_key",
  "private_key",
  "private_key_password",
  "ssh_private_key",
  "secret",
]);

function visitValues(name: string, expr: Expr, visit: (name: string, expr: Expr) => void): void {
  if (expr.kind === "object") {
    for (const item of expr.items) visitValues(item.keyName ?? "", item.value, visit);
  } else if (expr.kind === "tuple") {
    for (const item of expr.items) visitValues(name, item, visit);
  } else {
    visit(name, expr);
  }
}

function literalCredentials(block: Block): { name: string; expr: Expr; attrAt: Block["at"] }[] {
  const found: { name: string; expr: Expr; attrAt: Block["at"] }[] = [];
  for (const attribute of allAttributes(block.body)) {
    visitValues(attribute.name, attribute.expr, (name, expr) => {
      if (!credentialNames.has(name.toLowerCase())) return;
      if (expr.kind === "literal" && typeof expr.value === "string" && expr.value !== "") found.push({ name, expr, attrAt: expr.at });
    });
  }
  return found;
}

export const moduleProviderConfig = inEveryModule((m) =>
  expressionSet(m).providers.flatMap((block) =>
    literalCredentials(block).map(({ name, attrAt }) =>
      at(
        attrAt,
        checkIds.moduleProviderConfig,
        "warning",
        `provider ${block.labels[0]} argument ${name} is a literal: credentials come from the identity, never from the module`,
        `remove ${name}; the provider reads it from the identity's mounted credentials or environment`,
      ),
    ),
  ),
);

export function moduleTofuShadow(ctx: CheckContext): Finding[] {
  const m = ctx.module;
  if (!m.tofu || !m.hasTf) return [];
  const tf = m.tf.declarations;
  const tofu = m.tofu.declarations;
  const keys = [...new Set([...tf.keys(), ...tofu.keys()])].sort();
  const out: Finding[] = [];
  const fix = "make the .tofu file declare the same thing as the .tf file it hides, or drop one of them";
  for (const key of keys) {
    const a = tf.get(key);
    const b = tofu.get(key);
    if (a && b && a.signature === b.signature) continue;
    if (a && !b) {
      out.push(
        at(
          a.at,
          checkIds.moduleTofuShadow,
          "warning",
          `${key} is declared for Terraform, but a .tofu file hides it from OpenTofu; the contract checks read Terraform's files`,
          fix,
        ),
      );
    } else if (!a && b) {
      out.push(
        at(
          b.at,
          checkIds.moduleTofuShadow,
          "warning",
          `${key} is declared only in a .tofu file: Terraform does not see it; the contract checks read Terraform's files`,
          fix,
        ),
      );
    } else if (b) {
      out.push(
        at(
          b.at,
          checkIds.moduleTofuShadow,
          "warning",
          `${key} differs between OpenTofu's files and Terraform's; the contract checks read Terraform's files`,
          fix,
        ),
      );
    }
  }
  return out;
}

/** The desired-count attributes of the common scaling groups (ASG, EKS node group, MIG, VMSS, OCI pool). */
export const desiredCapacityPattern = /\b(desired_capacity|desired_size|target_size|instance_count)\b|\bsku(\[\d+\])?\.capacity\b/;

function ignoresDesiredCount(resource: Block): boolean {
  for (const lifecycle of resource.body.blocks.filter((b) => b.type === "lifecycle")) {
    const ignore = lifecycle.body.attributes.find((a) => a.name === "ignore_changes");
    if (!ignore) continue;
    if (ignore.expr.text.trim() === "all" || desiredCapacityPattern.test(ignore.expr.text)) return true;
  }
  return false;
}

function blockReferences(block: Block, root: string, name: string): boolean {
  return allAttributes(block.body).some((a) => exprReferences(a.expr, root, name));
}

function poolAutoscalingOne(m: LoadedModule): Finding[] {
  const set = expressionSet(m);
  const uses = set.references.filter((r) => r.root === "var" && r.attrs[0] === "autoscaling");
  if (uses.length === 0) return [];
  const scalingGroups = set.resources.filter((r) => blockReferences(r, "var", "autoscaling"));
  if (scalingGroups.some(ignoresDesiredCount)) return [];
  const where = scalingGroups[0]?.at ?? uses[0]!.at;
  return [
    at(
      where,
      checkIds.poolAutoscalingIgnoreChanges,
      "warning",
      "the module uses var.autoscaling, but no resource that uses it ignores changes to its desired capacity: every apply " +
        "resets the autoscaler",
      "add lifecycle { ignore_changes = [desired_capacity] } (or your group's count attribute) to the scaling group",
    ),
  ];
}

export const poolAutoscalingIgnoreChanges = inEveryModule(poolAutoscalingOne);
