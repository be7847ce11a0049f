import { jestProject } from "../../jest.base.js";
// src/reference.ts, src/events.ts and src/anchors.ts run in child processes (the generator's --check,
// VitePress), which jest does not instrument: counting them would report their lines as never run.
export default jestProject(import.meta.url, {
  displayName: "docs",
  coveragePathIgnorePatterns: ["/node_modules/", "\\.generated\\.ts$", "/packages/docs/src/(reference|events|anchors)\\.ts$"],
});
