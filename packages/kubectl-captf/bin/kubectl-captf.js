#!/usr/bin/env node
// The installed command (kubectl finds it on PATH as `kubectl captf`): runs the built CLI.
const { main } = await import("../dist/cli.js");
process.exitCode = await main(process.argv.slice(2));
