// One jest process for every package: faster than a process per package.
export default { projects: ["<rootDir>/packages/*"] };
