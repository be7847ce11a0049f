// Moved to bench/lib/admission-chain.mjs; this path stays while
// packages/controller/src/webhooks/admission-fuzz.integration.test.ts imports it by path.
export * from "../lib/admission-chain.mjs";
