import base from "../../jest.base.js";
// src/reference.ts, src/events.ts and src/anchors.ts run in child processes (the generator's --check,
// VitePress), which jest does not instrument: counting them would report their lines as never run.
export default {
  ...base,
  displayName: "docs",
  collectCoverageFrom: [
    ...base.collectCoverageFrom,
    "!<rootDir>/src/reference.ts",
    "!<rootDir>/src/events.ts",
    "!<rootDir>/src/anchors.ts",
  ],
};
