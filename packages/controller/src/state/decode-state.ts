import { gunzipSync } from "node:zlib";
import { annotations } from "@captf/contract/api";
import { stateSecretName } from "@captf/render";

/**
 * Reading a Terraform/OpenTofu state out of the kubernetes backend's Secrets, both layouts:
 * OpenTofu's single Secret `tfstate-default-<suffix>`, and Terraform's chunked one where the
 * gzip stream continues in `tfstate-default-<suffix>-part-N`. Pure: the Secrets come in listed.
 */

/** The part of a Secret the decoder reads. `data` values are base64, as the API serves them. */
export interface StateSecret {
  name: string;
  data?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface StateLimits {
  maxSecrets: number;
  maxDecompressedBytes: number;
}

export const defaultStateLimits: StateLimits = { maxSecrets: 32, maxDecompressedBytes: 64 * 1024 * 1024 };

export interface DecodedState {
  serial: number;
  lineage: string;
  terraformVersion: string;
  /** Root output values by name. */
  outputs: Record<string, unknown>;
  /** Managed resources (a count or for_each resource counts once). */
  managedResources: number;
  /** `captf.io/inputs-hash` on the base Secret: the inputs of the last successful apply. */
  inputsHash?: string;
  /** Bytes of the state JSON and of its compressed form across all Secrets. */
  bytes: number;
  compressedBytes: number;
  secrets: number;
}

export type StateReading =
  | { kind: "absent" }
  | { kind: "ok"; state: DecodedState }
  | {
      kind: "unreadable";
      reason:
        | "StateInconsistent"
        | "StateCorrupt"
        | "StateEncrypted"
        | "StateTooLarge"
        | "StateLineageChanged"
        | "StateEncryptionKeyUnavailable";
      message: string;
    };

const partPattern = /-part-(\d+)$/;

type Unreadable = Extract<StateReading, { kind: "unreadable" }>;

export function unreadable(reason: Unreadable["reason"], message: string): Unreadable {
  return { kind: "unreadable", reason, message };
}

/** The state document as assembled from the Secrets, before its fields are read (it may be an encrypted envelope). */
export interface StateDocument {
  kind: "document";
  document: Record<string, unknown>;
  baseName: string;
  base: StateSecret;
  bytes: number;
  compressedBytes: number;
  secrets: number;
}

/** Decodes the state Secrets of one backend suffix. Messages name Secrets and limits, never state content. */
export function decodeStateSecrets(
  suffix: string,
  secrets: readonly StateSecret[],
  limits: StateLimits = defaultStateLimits,
): StateReading {
  const assembled = assembleStateDocument(suffix, secrets, limits);
  return assembled.kind === "document" ? stateFromDocument(assembled) : assembled;
}

/** Joins the chunks, gunzips and parses the state JSON of one backend suffix; reads none of its fields. */
export function assembleStateDocument(
  suffix: string,
  secrets: readonly StateSecret[],
  limits: StateLimits = defaultStateLimits,
): Exclude<StateReading, { kind: "ok" }> | StateDocument {
  const baseName = stateSecretName(suffix);
  const mine = secrets.filter((secret) => secret.name === baseName || secret.name.startsWith(`${baseName}-part-`));
  if (mine.length === 0) return { kind: "absent" };
  if (mine.length > limits.maxSecrets) {
    return unreadable("StateTooLarge", `the state spans ${mine.length} Secrets; captf reads at most ${limits.maxSecrets}`);
  }
  const base = mine.find((secret) => secret.name === baseName);
  if (!base) return unreadable("StateInconsistent", `state chunks exist without their base Secret ${baseName}`);
  const parts = new Map<number, StateSecret>();
  for (const secret of mine) {
    if (secret === base) continue;
    const match = partPattern.exec(secret.name);
    const index = match ? Number(match[1]) : NaN;
    if (!Number.isSafeInteger(index) || index < 1 || String(index) !== match?.[1]) {
      return unreadable("StateInconsistent", `unexpected state Secret name ${secret.name}`);
    }
    parts.set(index, secret);
  }
  const chunks: Buffer[] = [];
  for (let index = 0; index <= parts.size; index++) {
    const secret = index === 0 ? base : parts.get(index);
    if (!secret)
      return unreadable("StateInconsistent", `state chunk ${baseName}-part-${index} is missing (${parts.size} part Secrets found)`);
    const payload = secret.data?.tfstate;
    if (payload === undefined) return unreadable("StateInconsistent", `Secret ${secret.name} has no tfstate key`);
    chunks.push(Buffer.from(payload, "base64"));
  }
  const compressed = Buffer.concat(chunks);

  let json: Buffer;
  try {
    json = gunzipSync(compressed, { maxOutputLength: limits.maxDecompressedBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" || error instanceof RangeError) {
      return unreadable("StateTooLarge", `the state is larger than ${limits.maxDecompressedBytes} bytes uncompressed`);
    }
    return unreadable("StateCorrupt", `the state in ${baseName} is not valid gzip: ${(error as Error).message}`);
  }

  let document: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json.toString("utf8"));
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
    document = parsed as Record<string, unknown>;
  } catch {
    return unreadable("StateCorrupt", `the state in ${baseName} is not a JSON object`);
  }
  return { kind: "document", document, baseName, base, bytes: json.length, compressedBytes: compressed.length, secrets: mine.length };
}

/** True when the document is OpenTofu's encrypted envelope rather than a state. */
export function isEncryptedStateDocument(document: Record<string, unknown>): boolean {
  return "encryption_version" in document || "encrypted_data" in document;
}

/** Reads serial, lineage, outputs and resources of a plain state document. */
export function stateFromDocument({ document, baseName, base, bytes, compressedBytes, secrets }: StateDocument): StateReading {
  if (isEncryptedStateDocument(document)) {
    return unreadable("StateEncrypted", `the state in ${baseName} is encrypted (OpenTofu state encryption); captf cannot read its outputs`);
  }
  if (document.version !== 4)
    return unreadable(
      "StateCorrupt",
      `the state in ${baseName} has format version ${JSON.stringify(document.version)}; captf reads version 4`,
    );

  const outputs: Record<string, unknown> = {};
  const rawOutputs = document.outputs;
  if (rawOutputs && typeof rawOutputs === "object") {
    for (const [name, entry] of Object.entries(rawOutputs as Record<string, unknown>)) {
      if (entry && typeof entry === "object" && "value" in entry) outputs[name] = (entry as { value: unknown }).value;
    }
  }
  // Entries are whatever the document holds (null included): only objects with mode "managed" count.
  const resources: unknown[] = Array.isArray(document.resources) ? document.resources : [];
  const inputsHash = base.annotations?.[annotations.inputsHash];
  return {
    kind: "ok",
    state: {
      serial: typeof document.serial === "number" ? document.serial : 0,
      lineage: typeof document.lineage === "string" ? document.lineage : "",
      terraformVersion: typeof document.terraform_version === "string" ? document.terraform_version : "",
      outputs,
      managedResources: resources.filter((resource) => (resource as { mode?: unknown } | null)?.mode === "managed").length,
      ...(inputsHash ? { inputsHash } : {}),
      bytes,
      compressedBytes,
      secrets,
    },
  };
}
