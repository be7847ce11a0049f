// A TerraformCluster whose state is encrypted (spec.stateEncryption): its machines and pools read the cluster's exports with the
// cluster's own key, and wait while that key cannot be used. Found by the e2e's signed and encrypted scenario: machines of such a
// cluster waited for WaitingForClusterInfrastructure for good.
import { createCipheriv, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { stateSecretSuffix } from "@captf/render";
import { capiTypes } from "../api/cluster-api.js";
import { terraformClusterType } from "../api/resource-types.js";
import { passReads } from "../reconcile/pass-reads.js";
import type { ReconcilerDeps } from "../reconcile/types.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { backendSuffixLabel } from "../state/read-state.js";
import { clusterStateOutputs } from "./adapters.js";

const namespace = "ns";
const key = randomBytes(32);
const exports = { network: "net-1" };

/** TF_ENCRYPTION with a literal aes_gcm key (tofu decrypts with decryption_key alone: both given). */
const rawKeyConfiguration = (bytes: Buffer) =>
  JSON.stringify({
    method: { aes_gcm: { raw: { keys: { encryption_key: [...bytes], decryption_key: [...bytes] } } } },
    state: { method: "method.aes_gcm.raw" },
  });

/** The cluster's state as the kubernetes backend stores it, sealed with `key` as tofu seals it (nonce, ciphertext, tag). */
function encryptedStateSecret() {
  const state = { version: 4, serial: 3, lineage: "lin-1", outputs: { exports: { value: exports } }, resources: [] };
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const sealed = Buffer.concat([nonce, cipher.update(JSON.stringify(state)), cipher.final(), cipher.getAuthTag()]);
  const envelope = { serial: 3, lineage: "lin-1", meta: {}, encrypted_data: sealed.toString("base64"), encryption_version: "v0" };
  const suffix = stateSecretSuffix({ role: "cluster", namespace, name: "c1" });
  return {
    metadata: {
      name: `tfstate-default-${suffix}`,
      labels: { [backendSuffixLabel]: suffix },
      annotations: { [annotations.inputsHash]: "h2:applied" },
    },
    data: { tfstate: gzipSync(JSON.stringify(envelope)).toString("base64") },
  };
}

/** The Cluster c1 over an encrypting TerraformCluster c1 and its applied state; the key Secret `state-key` holds `configuration`. */
function plane(configuration: string | undefined) {
  const fake = new FakeObjects()
    .seed(capiTypes.cluster, namespace, {
      metadata: { name: "c1" },
      spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name: "c1" } },
    })
    .seed(terraformClusterType, namespace, {
      metadata: { name: "c1" },
      spec: { source: { image: "m:v1" }, stateEncryption: { secretRef: { name: "state-key" } } },
    })
    .seed(builtinTypes.secret, namespace, encryptedStateSecret());
  if (configuration !== undefined)
    fake.seed(builtinTypes.secret, namespace, {
      metadata: { name: "state-key" },
      data: { TF_ENCRYPTION: Buffer.from(configuration).toString("base64") },
    });
  return clusterStateOutputs({ client: fake.client } as ReconcilerDeps, passReads(fake.client, namespace), namespace, "c1");
}

describe("the exports of a cluster whose state is encrypted", () => {
  it("reaches its machines and pools, read with the cluster's key", async () => {
    expect(await plane(rawKeyConfiguration(key))).toEqual({ exports, failureDomainNames: [] });
  });

  it.each([
    ["its key Secret does not exist", undefined],
    ["its key Secret holds no configuration captf can use", "not a configuration"],
    ["its key does not open the state", rawKeyConfiguration(randomBytes(32))],
  ])("is not there yet (the machines wait) while %s", async (_case, configuration) => {
    expect(await plane(configuration)).toBeUndefined();
  });
});
