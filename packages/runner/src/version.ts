/** The runner's own version; a test keeps it equal to package.json's. */
export const runnerVersion = "0.1.0";
