import { describe, expect, it } from "@jest/globals";
import type { V1Secret } from "@kubernetes/client-node";
import { backupPlacement, backupSecretName, backupSets, backupsToPrune, stateDigest, type BackupSet } from "./state-backups.js";

function chunk(serial: number, index: number, chunks: number, extra: Record<string, string> = {}): V1Secret {
  return {
    metadata: {
      name: backupSecretName("abc-m", serial, index),
      annotations: {
        "captf.io/state-backup-serial": String(serial),
        "captf.io/state-backup-chunk": String(index),
        "captf.io/state-backup-chunks": String(chunks),
        "captf.io/state-backup-taken-at": "2026-12-02T10:00:00Z",
        "captf.io/state-backup-resources": "2",
        ...extra,
      },
    },
    data: { tfstate: Buffer.from(`chunk-${serial}-${index}`).toString("base64") },
  };
}

describe("backupSets", () => {
  it("groups chunks by serial in chunk order, newest first, and knows complete sets", () => {
    const sets = backupSets([chunk(3, 1, 2), chunk(2, 0, 1, { "captf.io/inputs-hash": "h2:x" }), chunk(3, 0, 2), chunk(4, 0, 2)]);
    expect(sets.map((set) => [set.serial, set.names, set.complete])).toEqual([
      [4, ["captf-state-backup-abc-m-4"], false],
      [3, ["captf-state-backup-abc-m-3", "captf-state-backup-abc-m-3-part-1"], true],
      [2, ["captf-state-backup-abc-m-2"], true],
    ]);
    expect(sets[2]).toMatchObject({ inputsHash: "h2:x", resources: 2, takenAt: "2026-12-02T10:00:00Z", bytes: "chunk-2-0".length });
  });

  it("ignores Secrets without a serial", () => {
    expect(backupSets([{ metadata: { name: "x" } }])).toEqual([]);
  });
});

describe("backupsToPrune", () => {
  const set = (serial: number, complete = true): BackupSet => ({
    name: `b-${serial}`,
    serial,
    digest: "",
    names: [`b-${serial}`],
    complete,
    takenAt: "",
    bytes: 1,
    resources: 0,
  });

  it("keeps the newest complete sets and the newest incomplete one", () => {
    expect(backupsToPrune([set(9, false), set(8), set(7, false), set(6), set(5)], 2)).toEqual(["b-7", "b-5"]);
  });

  it("never prunes nor counts the set a restore names", () => {
    expect(backupsToPrune([set(9), set(8), set(7)], 1, 7)).toEqual(["b-8"]);
  });

  it("keeps nothing with 0, except what a restore names", () => {
    expect(backupsToPrune([set(2), set(1)], 0, 1)).toEqual(["b-2"]);
  });
});

describe("backupPlacement", () => {
  const digestA = "a".repeat(64);
  const digestB = "b0c1d2e3".padEnd(64, "f");
  const set = (name: string, serial: number, digest: string, complete = true): BackupSet => ({
    name,
    serial,
    digest,
    names: [name],
    complete,
    takenAt: "",
    bytes: 1,
    resources: 0,
  });
  const base = backupSecretName("abc-m", 7, 0);

  it("takes nothing when a complete set holds the serial with the same content", () => {
    expect(backupPlacement([set(base, 7, digestA)], "abc-m", 7, digestA)).toEqual({ kind: "present", set: set(base, 7, digestA) });
  });

  it("names a new serial's set after the serial", () => {
    expect(backupPlacement([set(backupSecretName("abc-m", 6, 0), 6, digestA)], "abc-m", 7, digestB)).toEqual({ kind: "new", name: base });
  });

  it("puts other content of a backed-up serial beside it, as -<digest8>", () => {
    expect(backupPlacement([set(base, 7, digestA)], "abc-m", 7, digestB)).toEqual({ kind: "new", name: `${base}-b0c1d2e3` });
  });

  it("completes an interrupted set of the same content under its own name", () => {
    expect(backupPlacement([set(base, 7, digestA, false)], "abc-m", 7, digestA)).toEqual({ kind: "new", name: base });
  });
});

describe("stateDigest", () => {
  it("is the sha256 of the compressed chunks in chunk order, as the reference writes it", () => {
    const secret = (name: string, text: string) => ({ metadata: { name }, data: { tfstate: Buffer.from(text).toString("base64") } });
    const digest = stateDigest([secret("tfstate-default-x-part-1", "world"), secret("tfstate-default-x", "hello ")]);
    expect(digest).toBe("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  });
});
