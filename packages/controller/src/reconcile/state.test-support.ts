// A state reading as the state phase leaves it: decoded, with these outputs, serial and inputs hash.
import type { StateReading } from "../state/decode-state.js";

export const machineOutputs = {
  provider_id: "noop:///ns/m",
  addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
  failure_domain: "fd1",
  interruptible: false,
  health: { state: "running", healthy: true },
};

export function stateWith(outputs: Record<string, unknown>, serial = 3, inputsHash: string | undefined = "h2:applied"): StateReading {
  return {
    kind: "ok",
    state: {
      serial,
      lineage: "lineage-1",
      terraformVersion: "1.12.0",
      outputs,
      managedResources: 2,
      ...(inputsHash ? { inputsHash } : {}),
      bytes: 1000,
      compressedBytes: 300,
      secrets: 1,
    },
  };
}
