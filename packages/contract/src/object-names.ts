import { createHash } from "node:crypto";

/**
 * Names of Kubernetes objects and label values derived from a Terraform* object's or a Cluster's
 * name, bounded the way the public reference bounds them, so both write and select the same values.
 */

/** The longest label value Kubernetes accepts. */
export const maxLabelValueLength = 63;
/** The longest name of a Secret, a Lease or any other DNS-subdomain-named object. */
export const maxObjectNameLength = 253;

/** The first 16 hex digits of the SHA-256 of `text`. */
function digest16(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16);
}

/**
 * The value a label carrying a name holds: the name itself when it fits a label value (63 characters),
 * else the first 16 hex digits of its SHA-256. Write and select through this alike. Pure.
 */
export function nameLabelValue(name: string): string {
  return name.length <= maxLabelValueLength ? name : digest16(name);
}

/**
 * `<prefix><name>` when it fits 253 characters; else its start, cut to leave room for `-<16 hex digits
 * of sha256(name)>` and with trailing dashes and dots trimmed (a DNS subdomain's labels end
 * alphanumeric), followed by that. Pure.
 */
export function boundedObjectName(prefix: string, name: string): string {
  const full = prefix + name;
  if (full.length <= maxObjectNameLength) return full;
  const tail = `-${digest16(name)}`;
  return full.slice(0, maxObjectNameLength - tail.length).replace(/[-.]+$/, "") + tail;
}
