import { jestProject } from "../../jest.base.js";
export default jestProject(import.meta.url, {
  displayName: "runner",
  globalSetup: "<rootDir>/packages/testkit/jest-global-setup.mjs",
  globalTeardown: "<rootDir>/packages/testkit/jest-global-teardown.mjs",
});
