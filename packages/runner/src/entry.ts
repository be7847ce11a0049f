// The runner as a program: `node runner.mjs <command>` in a Job, `bin/runner.js` in a checkout.
import { runFromProcess } from "./cli.js";

process.exitCode = await runFromProcess();
