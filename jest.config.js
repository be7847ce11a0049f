// One jest process for every package that has tests (a package with a jest.config.js) and e2e/:
// faster than a process per package. Module packages without JavaScript tests are left out.
// Coverage floors: contract and render must keep at least 90 % of their lines covered.
import { existsSync, readdirSync } from "node:fs";

const packagesWithTests = readdirSync(new URL("./packages/", import.meta.url)).filter((name) =>
  existsSync(new URL(`./packages/${name}/jest.config.js`, import.meta.url)),
);

export default {
  projects: [...packagesWithTests.map((name) => `<rootDir>/packages/${name}`), "<rootDir>/e2e"],
  coverageThreshold: {
    "./packages/contract/src/": { lines: 90 },
    "./packages/render/src/": { lines: 90 },
  },
};
