// The fuzzed-output drill (bench/drills/fuzz-outputs.mjs) at a test's size: mutated output
// documents through decodeOutputs, mutated states and damaged state Secrets through the state
// reader, 200 each with a fixed seed. Neither may throw; each answers a verdict with a message.
import { fileURLToPath } from "node:url";
import { describe, it } from "@jest/globals";
import fc from "fast-check";
import { decodeOutputs, outputValuesFromState } from "@captf/contract";
import { stateSecretName } from "@captf/render";
import { decodeStateSecrets } from "./decode-state.js";

const drill = fileURLToPath(new URL("../../../../bench/lib/output-documents.mjs", import.meta.url));
const runs = { numRuns: 200, seed: 1717 };

describe("fuzzed output documents and state Secrets", () => {
  it.each(["decodeOutputs", "outputsFromState", "stateReader"] as const)(
    "%s never throws and always answers a verdict with a message",
    async (name) => {
      const { outputDocumentProperties } = (await import(drill)) as {
        outputDocumentProperties: (fc: unknown, subjects: unknown) => Record<string, fc.IProperty<unknown>>;
      };
      fc.assert(outputDocumentProperties(fc, { decodeOutputs, outputValuesFromState, decodeStateSecrets, stateSecretName })[name]!, runs);
    },
  );
});
