#!/usr/bin/env node
// Drill: 10,000 mutated contract output documents through decodeOutputs, 10,000 mutated state
// documents through outputValuesFromState + decodeOutputs, and 10,000 mutated or damaged state
// Secrets through the state reader (decodeStateSecrets). None may throw. Run `npx tsc -b` first.
// Usage: node bench/drills/fuzz-outputs.mjs [--runs N] [--seed S]
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { outputDocumentProperties } from "../lib/output-documents.mjs";
import { drillOptions, fc, runProperty } from "../lib/run-property.mjs";

const repo = new URL("../..", import.meta.url).pathname;
const load = (pkg, file) => import(pathToFileURL(join(repo, "packages", pkg, "dist", file)).href);
const { decodeOutputs, outputValuesFromState } = await load("contract", "decode-outputs.js");
const { decodeStateSecrets } = await load("controller", "state/decode-state.js");
const { stateSecretName } = await load("render", "index.js");

const options = drillOptions();
let held = true;
for (const name of ["decodeOutputs", "outputsFromState", "stateReader"]) {
  const properties = outputDocumentProperties(fc, { decodeOutputs, outputValuesFromState, decodeStateSecrets, stateSecretName });
  held = (await runProperty(name, properties[name], options, properties.tally)) && held;
}
process.exit(held ? 0 : 1);
