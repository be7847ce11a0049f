// Shared jest settings: native ESM through ts-jest, workspace packages resolved to their sources.

/**
 * Test tiers by name (docs/testing.md): CAPTF_TEST_TIER=unit leaves out every suite that needs a real
 * program (`*.integration.test.ts`, and the e2e's project), =integration runs only those.
 */
export const tierIgnorePatterns = {
  unit: ["/node_modules/", "\\.integration\\.test\\.ts$", "/e2e/src/"],
  integration: ["/node_modules/", "^(?!.*(\\.integration\\.test\\.ts|/e2e/src/[^/]+\\.test\\.ts)$)"],
};
const tier = process.env.CAPTF_TEST_TIER;
if (tier !== undefined && !(tier in tierIgnorePatterns))
  throw new Error(`CAPTF_TEST_TIER=${tier}: expected unit or integration (or unset for every suite)`);

export default {
  testPathIgnorePatterns: tier ? tierIgnorePatterns[tier] : ["/node_modules/"],
  testEnvironment: "node",
  testEnvironmentOptions: { customExportConditions: ["@captf/source", "node", "node-addons"] },
  testMatch: ["<rootDir>/src/**/*.test.ts"],
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: "<rootDir>/tsconfig.test.json" }] },
  collectCoverageFrom: ["<rootDir>/src/**/*.ts", "!<rootDir>/src/**/*.test.ts", "!<rootDir>/src/**/*.generated.ts"],
};
