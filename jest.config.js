// One jest process for every package: faster than a process per package.
// Coverage floors: contract and render must keep at least 90 % of their lines covered.
export default {
  projects: ["<rootDir>/packages/*"],
  coverageThreshold: {
    "./packages/contract/src/": { lines: 90 },
    "./packages/render/src/": { lines: 90 },
  },
};
