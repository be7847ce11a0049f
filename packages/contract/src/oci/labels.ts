// The machine capacity labels and the variables schema label, parsed alike by tfcapi-lint and the
// TerraformMachineTemplate controller.

export const capacityLabel = "io.captf.capacity";
export const nodeInfoLabel = "io.captf.node-info";
export const variablesSchemaLabel = "io.captf.variables-schema";
export const architectures = ["amd64", "arm64", "s390x", "ppc64le"] as const;

/** A label's value once parsed, or what is wrong with it (naming the entry, never quoting the whole label). */
export type LabelReading<T> = { ok: true; value: T } | { ok: false; message: string };

export interface NodeInfo {
  architecture?: (typeof architectures)[number];
  operatingSystem?: string;
}

// Kubernetes resource.Quantity: a decimal number with a binary-SI, decimal-SI or exponent suffix.
const quantity = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;
// Kubernetes IsQualifiedName: [DNS-subdomain prefix/]name, name 1–63 characters.
const qualifiedName =
  /^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

function parseObject(label: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(label);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const invalid = (message: string): { ok: false; message: string } => ({ ok: false, message });

/** io.captf.capacity: resource name → quantity string, at least one. */
export function parseCapacityLabel(label: string): LabelReading<Record<string, string>> {
  const object = parseObject(label);
  if (!object || Object.values(object).some((v) => typeof v !== "string"))
    return invalid(`${capacityLabel} is not a JSON object of quantity strings`);
  const entries = Object.entries(object) as [string, string][];
  if (entries.length === 0) return invalid(`${capacityLabel} is empty`);
  for (const [name, value] of entries) {
    const prefix = name.includes("/") ? name.slice(0, name.indexOf("/")) : "";
    if (!qualifiedName.test(name) || prefix.length > 253)
      return invalid(`${capacityLabel}: ${JSON.stringify(name)} is not a valid resource name`);
    if (!quantity.test(value)) return invalid(`${capacityLabel}: ${JSON.stringify(value)} is not a quantity for ${JSON.stringify(name)}`);
  }
  return { ok: true, value: Object.fromEntries(entries) };
}

/** io.captf.node-info: architecture and operatingSystem, at least one of them. */
export function parseNodeInfoLabel(label: string): LabelReading<NodeInfo> {
  const object = parseObject(label);
  const keys = object ? Object.keys(object) : [];
  if (
    !object ||
    keys.some((k) => k !== "architecture" && k !== "operatingSystem") ||
    Object.values(object).some((v) => typeof v !== "string")
  ) {
    return invalid(`${nodeInfoLabel} is not {"architecture","operatingSystem"}`);
  }
  const arch = (object.architecture as string | undefined) ?? "";
  const os = (object.operatingSystem as string | undefined) ?? "";
  if (arch === "" && os === "") return invalid(`${nodeInfoLabel} sets neither architecture nor operatingSystem`);
  if (arch !== "" && !(architectures as readonly string[]).includes(arch))
    return invalid(`${nodeInfoLabel}: unknown architecture ${JSON.stringify(arch)}`);
  if (os.length > 64) return invalid(`${nodeInfoLabel}: operatingSystem longer than 64 characters`);
  return {
    ok: true,
    value: { ...(arch ? { architecture: arch as NodeInfo["architecture"] } : {}), ...(os ? { operatingSystem: os } : {}) },
  };
}
