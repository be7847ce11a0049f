// Moved to bench/lib/admission-objects.mjs; this path stays while
// packages/controller/src/webhooks/admission-fuzz.integration.test.ts imports it by path.
export * from "../lib/admission-objects.mjs";
