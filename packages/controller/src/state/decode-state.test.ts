import { gzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import { decodeStateSecrets, type StateSecret } from "./decode-state.js";

const suffix = "0123456789abcdef-m";
const base = `tfstate-default-${suffix}`;
const state = (extra: Record<string, unknown> = {}) => ({
  version: 4,
  terraform_version: "1.12.6",
  serial: 7,
  lineage: "9c1f",
  outputs: {
    provider_id: { value: "noop:///ns/m", type: "string" },
    health: { value: { state: "running", healthy: true }, type: ["object", {}] },
  },
  resources: [
    { mode: "managed", type: "terraform_data", name: "instance", instances: [{}, {}] },
    { mode: "data", type: "terraform_remote_state", name: "x", instances: [{}] },
  ],
  ...extra,
});
const secret = (name: string, payload: Buffer, annotations?: Record<string, string>): StateSecret => ({
  name,
  data: { tfstate: payload.toString("base64") },
  annotations,
});

function chunked(document: unknown, parts: number): StateSecret[] {
  const gz = gzipSync(JSON.stringify(document));
  const size = Math.ceil(gz.length / (parts + 1));
  return Array.from({ length: parts + 1 }, (_, i) => secret(i === 0 ? base : `${base}-part-${i}`, gz.subarray(i * size, (i + 1) * size)));
}

describe("decodeStateSecrets", () => {
  it("reads OpenTofu's single Secret with the inputs hash annotation", () => {
    const reading = decodeStateSecrets(
      suffix,
      [secret(base, gzipSync(JSON.stringify(state()))), secret("unrelated", Buffer.from("x"), { "captf.io/inputs-hash": "h2:b" })].map(
        (s, i) => (i === 0 ? { ...s, annotations: { "captf.io/inputs-hash": "h2:a" } } : s),
      ),
    );
    expect(reading).toMatchObject({
      kind: "ok",
      state: {
        serial: 7,
        lineage: "9c1f",
        terraformVersion: "1.12.6",
        managedResources: 1,
        inputsHash: "h2:a",
        secrets: 1,
        outputs: { provider_id: "noop:///ns/m", health: { state: "running", healthy: true } },
      },
    });
  });

  it("reassembles Terraform's chunks in order, whatever order they are listed in", () => {
    const secrets = chunked(state({ serial: 12 }), 3).reverse();
    expect(decodeStateSecrets(suffix, secrets)).toMatchObject({ kind: "ok", state: { serial: 12, secrets: 4 } });
  });

  it("is absent without any Secret", () => {
    expect(decodeStateSecrets(suffix, [])).toEqual({ kind: "absent" });
  });

  it.each<[string, StateSecret[], string, RegExp]>([
    ["a missing chunk", chunked(state(), 3).filter((s) => !s.name.endsWith("-part-2")), "StateInconsistent", /part-2 is missing/],
    ["chunks without a base", chunked(state(), 2).slice(1), "StateInconsistent", /without their base Secret/],
    [
      "a strange chunk name",
      [...chunked(state(), 1), secret(`${base}-part-01`, Buffer.from("x"))],
      "StateInconsistent",
      /unexpected state Secret name/,
    ],
    ["no tfstate key", [{ name: base, data: {} }], "StateInconsistent", /has no tfstate key/],
    ["not gzip", [secret(base, Buffer.from("plain"))], "StateCorrupt", /not valid gzip/],
    ["a truncated gzip", [secret(base, gzipSync(JSON.stringify(state())).subarray(0, 40))], "StateCorrupt", /not valid gzip/],
    [
      "a corrupted chunk",
      chunked(state(), 2).map((s, i) =>
        i === 1 ? secret(s.name, Buffer.from(Buffer.from(s.data!.tfstate!, "base64").map((b) => b ^ 0x5a))) : s,
      ),
      "StateCorrupt",
      /not valid gzip/,
    ],
    ["not JSON", [secret(base, gzipSync("{oops"))], "StateCorrupt", /not a JSON object/],
    ["an old format", [secret(base, gzipSync(JSON.stringify(state({ version: 3 }))))], "StateCorrupt", /format version 3/],
    [
      "encryption",
      [secret(base, gzipSync(JSON.stringify({ encryption_version: "v0", encrypted_data: "SECRET" })))],
      "StateEncrypted",
      /encrypted/,
    ],
  ])("reports %s", (_, secrets, reason, message) => {
    const reading = decodeStateSecrets(suffix, secrets);
    expect(reading).toMatchObject({ kind: "unreadable", reason });
    expect(reading.kind === "unreadable" && reading.message).toMatch(message);
    expect(JSON.stringify(reading)).not.toContain("SECRET");
  });

  it("counts only object resources: a null or scalar entry is skipped, never a throw", () => {
    const odd = state({ resources: [null, 7, "x", [], { mode: "managed" }] });
    expect(decodeStateSecrets(suffix, [secret(base, gzipSync(JSON.stringify(odd)))])).toMatchObject({
      kind: "ok",
      state: { managedResources: 1 },
    });
  });

  it("refuses more Secrets or more bytes than its limits", () => {
    expect(decodeStateSecrets(suffix, chunked(state(), 5), { maxSecrets: 4, maxDecompressedBytes: 1e9 })).toMatchObject({
      kind: "unreadable",
      reason: "StateTooLarge",
    });
    const big = state({ outputs: { blob: { value: "x".repeat(200_000) } } });
    expect(decodeStateSecrets(suffix, chunked(big, 0), { maxSecrets: 32, maxDecompressedBytes: 100_000 })).toMatchObject({
      kind: "unreadable",
      reason: "StateTooLarge",
    });
  });
});
