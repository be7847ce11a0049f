import base from "../../jest.base.js";
export default {
  ...base,
  displayName: "kubectl-captf",
  globalSetup: "<rootDir>/../testkit/jest-global-setup.mjs",
  globalTeardown: "<rootDir>/../testkit/jest-global-teardown.mjs",
};
