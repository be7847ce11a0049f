import base from "../../jest.base.js";
export default {
  ...base,
  displayName: "testkit",
  globalSetup: "<rootDir>/jest-global-setup.mjs",
  globalTeardown: "<rootDir>/jest-global-teardown.mjs",
};
