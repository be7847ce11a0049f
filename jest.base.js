// Shared jest settings: native ESM through ts-jest, workspace packages resolved to their sources.
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

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

const repositoryRoot = fileURLToPath(new URL(".", import.meta.url));

const base = {
  testPathIgnorePatterns: tier ? tierIgnorePatterns[tier] : ["/node_modules/"],
  testEnvironment: "node",
  testEnvironmentOptions: { customExportConditions: ["@captf/source", "node", "node-addons"] },
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  // Coverage counts the sources the suites load, of every package; generated files are not code anyone wrote.
  coveragePathIgnorePatterns: ["/node_modules/", "\\.generated\\.ts$"],
};

/**
 * The jest project of the package (or e2e/) whose jest.config.js is at `configUrl`. Its rootDir is the
 * repository, its roots the package: babel-plugin-istanbul instruments only files under a project's
 * rootDir, so with the package as rootDir the lines of other workspace packages a suite runs (contract's
 * registry client under tfcapi-lint's image tests) were never counted. Paths in `overrides` start from
 * the repository (`<rootDir>/packages/testkit/...`).
 */
export function jestProject(configUrl, overrides = {}) {
  const dir = relative(repositoryRoot, fileURLToPath(new URL(".", configUrl))).replace(/\/$/, "");
  return {
    ...base,
    rootDir: repositoryRoot,
    roots: [`<rootDir>/${dir}`],
    testMatch: [`<rootDir>/${dir}/src/**/*.test.ts`],
    transform: { "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: `<rootDir>/${dir}/tsconfig.test.json` }] },
    ...overrides,
  };
}
