// Shared jest settings: native ESM through ts-jest, workspace packages resolved to their sources.
export default {
  testEnvironment: "node",
  testEnvironmentOptions: { customExportConditions: ["@captf/source", "node", "node-addons"] },
  testMatch: ["<rootDir>/src/**/*.test.ts"],
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: "<rootDir>/tsconfig.test.json" }] },
  collectCoverageFrom: ["<rootDir>/src/**/*.ts", "!<rootDir>/src/**/*.test.ts", "!<rootDir>/src/**/*.generated.ts"],
};
