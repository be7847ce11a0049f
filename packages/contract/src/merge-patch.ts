/**
 * JSON merge patches (RFC 7386) as the Kubernetes API server applies them: null removes a field,
 * objects merge member by member, anything else (arrays included) replaces. One home for the
 * manager's patches and for the fakes and checks of the patches it sends.
 */
import { canonicalJson } from "./json-encoding.js";

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Deep equality as JSON documents: key order does not matter; undefined equals only undefined. */
export function sameJsonValue(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a, "any") === canonicalJson(b, "any");
}

/** What the API server makes of `target` under `patch`. Pure: `target` is not modified. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const base: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete base[key];
    else base[key] = applyMergePatch(base[key], value);
  }
  return base;
}

/** Whether `patch` changes `current`; members set to undefined are not sent, so they change nothing. Pure. */
export function mergePatchChanges(current: unknown, patch: unknown): boolean {
  if (!isObject(patch)) return !sameJsonValue(current, patch);
  if (!isObject(current)) return true;
  return Object.entries(patch).some(([key, value]) =>
    value === null ? key in current : value !== undefined && (!(key in current) || mergePatchChanges(current[key], value)),
  );
}

/**
 * The patch that turns `current` into `next`: a member only `current` has is set to null, at every
 * depth, so a value the patch must replace wholesale (a module's exports) loses the keys it no longer has. Pure.
 */
export function replacingMergePatch(current: unknown, next: unknown): unknown {
  if (!isObject(next) || !isObject(current)) return next;
  const patch: JsonObject = {};
  for (const key of Object.keys(current)) if (!(key in next)) patch[key] = null;
  for (const [key, value] of Object.entries(next)) patch[key] = replacingMergePatch(current[key], value);
  return patch;
}
