// The runner as a program: `node runner.mjs <command>` in a Job, `bin/runner.js` in a checkout.
import { runFromProcess } from "./cli.js";

// Output is written (pipes and files are synchronous on Linux) and events are closed: exit without tearing the heap down.
void runFromProcess().then((code) => process.exit(code));
