// Moved to bench/lib/output-documents.mjs; this path stays while packages/controller/src/state/fuzzed-documents.test.ts imports it by path.
export * from "../lib/output-documents.mjs";
