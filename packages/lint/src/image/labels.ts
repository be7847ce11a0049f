// The machine capacity labels, parsed as the TerraformMachineTemplate reconciler parses them.

export const capacityLabel = "io.captf.capacity";
export const nodeInfoLabel = "io.captf.node-info";
export const architectures = ["amd64", "arm64", "s390x", "ppc64le"] as const;

// Kubernetes resource.Quantity: a decimal number with a binary-SI, decimal-SI or exponent suffix.
const quantity = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;
// Kubernetes IsQualifiedName: [DNS-subdomain prefix/]name, name 1–63 characters.
const qualifiedName = /^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

function parseObject(label: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(label);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Undefined when valid, else what is wrong (naming the resource, never quoting the whole label). */
export function parseCapacityLabel(label: string): string | undefined {
  const object = parseObject(label);
  if (!object || Object.values(object).some((v) => typeof v !== "string")) return `${capacityLabel} is not a JSON object of quantity strings`;
  const entries = Object.entries(object) as [string, string][];
  if (entries.length === 0) return `${capacityLabel} is empty`;
  for (const [name, value] of entries) {
    const prefix = name.includes("/") ? name.slice(0, name.indexOf("/")) : "";
    if (!qualifiedName.test(name) || prefix.length > 253) return `${capacityLabel}: ${JSON.stringify(name)} is not a valid resource name`;
    if (!quantity.test(value)) return `${capacityLabel}: ${JSON.stringify(value)} is not a quantity for ${JSON.stringify(name)}`;
  }
  return undefined;
}

/** Undefined when valid, else what is wrong. */
export function parseNodeInfoLabel(label: string): string | undefined {
  const object = parseObject(label);
  const keys = object ? Object.keys(object) : [];
  if (!object || keys.some((k) => k !== "architecture" && k !== "operatingSystem") || Object.values(object).some((v) => typeof v !== "string")) {
    return `${nodeInfoLabel} is not {"architecture","operatingSystem"}`;
  }
  const arch = (object.architecture as string | undefined) ?? "";
  const os = (object.operatingSystem as string | undefined) ?? "";
  if (arch === "" && os === "") return `${nodeInfoLabel} sets neither architecture nor operatingSystem`;
  if (arch !== "" && !(architectures as readonly string[]).includes(arch)) return `${nodeInfoLabel}: unknown architecture ${JSON.stringify(arch)}`;
  if (os.length > 64) return `${nodeInfoLabel}: operatingSystem longer than 64 characters`;
  return undefined;
}
