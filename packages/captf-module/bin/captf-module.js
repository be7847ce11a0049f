#!/usr/bin/env node
// The installed command: runs the built CLI with the process's arguments and streams.
const { main } = await import("../dist/cli.js");
process.exitCode = await main(process.argv.slice(2));
