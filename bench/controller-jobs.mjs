// Moved to bench/lib/controller-jobs.mjs; this path stays while packages/controller/src/shards.integration.test.ts imports it by path.
export * from "./lib/controller-jobs.mjs";
