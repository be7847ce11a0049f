import { describe, expect, it } from "@jest/globals";
import type { V1Secret } from "@kubernetes/client-node";
import { backupSecretName, backupSets, backupsToPrune, type BackupSet } from "./state-backups.js";

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
    serial,
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
