// What the state phase counts, from the state, backup and lock objects as the backend and captf leave them: observeStateAndBackups
// reads them through a client and records into a real CaptfMetrics, read back by exposed name.
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { stateLockLeaseName, stateSecretName } from "@captf/render";
import type { V1Lease, V1Secret } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue, seriesValues } from "../metrics/series.test-support.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { backendSuffixLabel } from "../state/read-state.js";
import { backupSecretName, stateDigest, takeStateBackup } from "../state/state-backups.js";
import type { Condition } from "../conditions/conditions.js";
import { phasePass, passNamespace, passOwner } from "./phase-pass.test-support.js";
import { observeStateAndBackups } from "./workspace-phases.js";

const suffix = "m-suffix";
const now = Date.parse("2026-12-07T10:00:00Z");

/** A state Secret as the kubernetes backend writes it: gzipped JSON, base64, labelled with its suffix. */
function stateSecret(document: object, name = stateSecretName(suffix)): V1Secret {
  return {
    metadata: { name, namespace: passNamespace, labels: { [backendSuffixLabel]: suffix } },
    data: { tfstate: gzipSync(JSON.stringify(document)).toString("base64") },
  };
}
const state = (serial: number) => ({ version: 4, serial, lineage: "lineage-1", terraform_version: "1.12.0", outputs: {}, resources: [] });
/** OpenTofu's encrypted envelope, as a state with spec.stateEncryption is stored. */
const encryptedEnvelope = { encryption_version: "v0", encrypted_data: "c2VjcmV0", meta: {} };

/** An API server holding these Secrets and Leases; the names of the Secrets it holds. */
function objects(seed: { secrets?: V1Secret[]; leases?: V1Lease[] }) {
  const server = new FakeObjects();
  for (const secret of seed.secrets ?? []) server.seed(builtinTypes.secret, passNamespace, secret);
  for (const lease of seed.leases ?? []) server.seed(builtinTypes.lease, passNamespace, lease);
  const secretNames = async () =>
    (await server.list(builtinTypes.secret, passNamespace)).items.map((secret) => (secret as V1Secret).metadata!.name!).sort();
  return { client: server.client, secretNames };
}

/** The backup set captf writes of these state Secrets (the state phase's own writer). */
async function backupOf(stateSecrets: V1Secret[], serial: number): Promise<V1Secret[]> {
  const { client } = objects({});
  const digest = stateDigest(stateSecrets);
  await takeStateBackup(client, {
    namespace: passNamespace,
    suffix,
    setName: backupSecretName(suffix, serial, 0),
    digest,
    owner: { apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2", kind: passOwner.kind, name: passOwner.name, uid: passOwner.uid },
    stateSecrets,
    serial,
    lineage: "lineage-1",
    resources: 0,
    now: now - serial * 60_000,
  });
  return (await client.list<V1Secret>(builtinTypes.secret, passNamespace)).items;
}

/** A lock Lease as the backend leaves it while someone outside holds it. */
const foreignLock: V1Lease = {
  metadata: {
    name: stateLockLeaseName(suffix),
    namespace: passNamespace,
    annotations: { "app.terraform.io/lock-info": JSON.stringify({ ID: "1", Operation: "OperationTypeApply", Who: "alice@laptop" }) },
  },
  spec: { holderIdentity: "1" },
};
const readable = (reason: string): Condition[] =>
  [{ type: "StateReadable", status: "False", reason, lastTransitionTime: "2026-12-07T09:00:00Z" }] as Condition[];

interface StatePhaseCase {
  secrets?: V1Secret[];
  leases?: V1Lease[];
  wasProvisioned?: boolean;
  /** StateReadable as the previous pass left it. */
  previous?: Condition[];
  restoreSerial?: string;
  /** The serial the object's status last observed. */
  observedStateSerial?: number;
  stateBackups?: number;
}

async function observe(input: StatePhaseCase): Promise<{ registry: Registry; left: string[] }> {
  const registry = new Registry();
  const { client, secretNames } = objects({ secrets: input.secrets ?? [], leases: input.leases ?? [] });
  const pass = phasePass(client, new CaptfMetrics(registry), {
    now,
    object: {
      metadata: {
        name: passOwner.name,
        namespace: passNamespace,
        uid: passOwner.uid,
        ...(input.restoreSerial ? { annotations: { [annotations.restoreState]: input.restoreSerial } } : {}),
      },
      status: {
        conditions: input.previous ?? [],
        ...(input.observedStateSerial ? { observedStateSerial: input.observedStateSerial } : {}),
      },
    },
    scope: { previous: input.previous ?? [] },
    ...(input.stateBackups !== undefined ? { stateBackups: input.stateBackups } : {}),
  });
  await observeStateAndBackups(pass, [], undefined, input.wasProvisioned ?? false);
  return { registry, left: await secretNames() };
}

describe("the state phase's metrics", () => {
  it.each<[string, StatePhaseCase, [metric: string, labels: Record<string, string>, value: number][]]>([
    [
      "state chunks without their base Secret are inconsistent",
      { secrets: [stateSecret(state(3), `${stateSecretName(suffix)}-part-1`)] },
      [["captf_state_read_errors_total", { kind: "TerraformMachine", reason: "inconsistent" }, 1]],
    ],
    [
      "a state OpenTofu encrypted, read without a key, is encrypted",
      { secrets: [stateSecret(encryptedEnvelope)] },
      [["captf_state_read_errors_total", { kind: "TerraformMachine", reason: "encrypted" }, 1]],
    ],
    [
      "the state of a provisioned object that is gone is lost",
      { wasProvisioned: true },
      [["captf_state_read_errors_total", { kind: "TerraformMachine", reason: "lost" }, 1]],
    ],
    [
      "a lock someone outside holds is locked",
      { secrets: [stateSecret(state(3))], leases: [foreignLock], observedStateSerial: 3, stateBackups: 0 },
      [["captf_state_read_errors_total", { kind: "TerraformMachine", reason: "locked" }, 1]],
    ],
    [
      "a lock still held as on the previous pass is not counted again",
      { secrets: [stateSecret(state(3))], leases: [foreignLock], previous: readable("StateLocked"), stateBackups: 0 },
      [["captf_state_read_errors_total", { kind: "TerraformMachine", reason: "locked" }, 0]],
    ],
    [
      "a restore naming a serial no backup holds is not_found",
      { restoreSerial: "9" },
      [["captf_state_restores_total", { kind: "TerraformMachine", result: "not_found" }, 1]],
    ],
  ])("%s", async (_what, input, series) => {
    const { registry } = await observe(input);
    for (const [metric, labels, value] of series)
      expect([metric, labels, await seriesValue(registry, metric, labels)]).toEqual([metric, labels, value]);
  });

  it("counts a serial new to the object whose state a backup holds already as skipped, and takes no second copy", async () => {
    const current = [stateSecret(state(3))];
    const backup = await backupOf(current, 3);
    const { registry, left } = await observe({ secrets: [...current, ...backup], observedStateSerial: 2 });
    const skipped = { kind: "TerraformMachine", result: "skipped" };
    expect(await seriesValue(registry, "captf_state_backups_total", skipped)).toBe(1);
    expect(await seriesValue(registry, "captf_state_backups_total", { result: "taken" })).toBe(0);
    expect(left).toEqual([...backup.map((secret) => secret.metadata!.name!), stateSecretName(suffix)].sort());
  });

  it("counts a backup it could not write (a Secret of its name, not a backup, is in the way) as skipped", async () => {
    const current = [stateSecret(state(3))];
    const inTheWay: V1Secret = { metadata: { name: backupSecretName(suffix, 3, 0), namespace: passNamespace }, data: {} };
    const { registry, left } = await observe({ secrets: [...current, inTheWay], observedStateSerial: 3 });
    const skipped = { kind: "TerraformMachine", result: "skipped" };
    expect(await seriesValue(registry, "captf_state_backups_total", skipped)).toBe(1);
    expect(left).toEqual([backupSecretName(suffix, 3, 0), stateSecretName(suffix)]);
  });

  it("takes a backup of a new serial and counts the sets beyond --state-backups it deleted as pruned", async () => {
    const current = [stateSecret(state(3))];
    const older = [...(await backupOf([stateSecret(state(1))], 1)), ...(await backupOf([stateSecret(state(2))], 2))];
    const { registry, left } = await observe({ secrets: [...current, ...older], stateBackups: 1 });
    const counted = [
      { kind: "TerraformMachine", result: "taken", value: 1 },
      { kind: "TerraformMachine", result: "pruned", value: 1 },
    ];
    expect(await seriesValues(registry, "captf_state_backups_total", {}, counted)).toEqual(counted);
    expect(left).toEqual([`captf-state-backup-${suffix}-3`, stateSecretName(suffix)]);
  });
});
