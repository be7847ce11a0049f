import { encodeJson, parseJsonExact } from "@captf/contract";

/** What replaces a tfvars document that cannot be parsed, so nothing of it is logged. */
export const redactionFailed = "<redaction failed>";

/**
 * Returns `terraform.tfvars.json` fit for a log: `bootstrap_data` and every named
 * sensitive variable replaced by `"<redacted:len=N>"`, N being the UTF-8 length of the
 * value (its compact JSON when it is not a string). Unparseable input gives
 * {@link redactionFailed}: never a partial document.
 */
export function redactRenderedInputs(tfvarsJson: string, sensitiveNames: readonly string[] = []): string {
  let document: unknown;
  try {
    document = parseJsonExact(tfvarsJson);
  } catch {
    return redactionFailed;
  }
  if (!document || typeof document !== "object" || Array.isArray(document)) return redactionFailed;
  const hidden = new Set(["bootstrap_data", ...sensitiveNames]);
  const redacted: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(document as Record<string, unknown>)) {
    const text = typeof value === "string" ? value : encodeJson(value, { numbers: "any", sortKeys: false });
    Object.defineProperty(redacted, name, {
      value: hidden.has(name) ? `<redacted:len=${Buffer.byteLength(text)}>` : value,
      enumerable: true,
    });
  }
  return encodeJson(redacted, { numbers: "any", sortKeys: false, indent: 2 }) + "\n";
}
