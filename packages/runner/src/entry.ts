// The runner as a program: `node runner.mjs <command>` in a Job, `bin/runner.js` in a checkout.
import { existsSync } from "node:fs";
import nodeModule from "node:module";
import { fileURLToPath } from "node:url";

/** Where a bundle keeps the V8 code caches of its chunks (scripts/build-bundle.mjs writes them). */
export const compileCacheDirName = "compile-cache";

type EnableCompileCache = (options: { directory: string; portable: boolean }) => { status: number };

// Before the rest loads, so its chunks compile from the shipped cache. Portable: found again after
// `runner copy` moves the bundle. A read-only /captf/bin only keeps node from updating it.
const compileCache = fileURLToPath(new URL(compileCacheDirName, import.meta.url));
const enableCompileCache = (nodeModule as unknown as { enableCompileCache?: EnableCompileCache }).enableCompileCache;
if (enableCompileCache && existsSync(compileCache)) enableCompileCache({ directory: compileCache, portable: true });

const { runFromProcess } = await import("./cli.js");
process.exitCode = await runFromProcess();
