// jest globalSetup: one local control plane per jest run, shared by every integration suite.
// Idempotent, because each project that needs the plane lists this file. Skips the plane when a
// tool is missing: the suites themselves then fail loudly (or skip, with CAPTF_ALLOW_MISSING_TOOLS=1).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// The plain modules, not dist/index.js: that one also loads @jest/globals, which only exists inside a test.
const dist = new URL("./dist/control-plane.js", import.meta.url);
const toolsModule = new URL("./dist/tools.js", import.meta.url);

export default async function setup() {
  if (process.env.CAPTF_CONTROL_PLANE || globalThis.captfControlPlane) return;
  if (!existsSync(fileURLToPath(dist))) {
    execFileSync(
      process.execPath,
      [
        fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url)),
        "-b",
        fileURLToPath(new URL(".", import.meta.url)),
      ],
      { stdio: "inherit" },
    );
  }
  const { startControlPlane } = await import(dist.href);
  const { findTool } = await import(toolsModule.href);
  if (!findTool("etcd") || !findTool("kube-apiserver") || !findTool("kube-controller-manager")) return;
  const plane = await startControlPlane();
  globalThis.captfControlPlane = plane;
  const { dir, server, token, caFile, kubeconfigPath, startMillis } = plane;
  process.env.CAPTF_CONTROL_PLANE = JSON.stringify({ dir, server, token, caFile, kubeconfigPath, startMillis });
  console.log(`\ncontrol plane: etcd + kube-apiserver + kube-controller-manager ready at ${server} in ${(startMillis / 1000).toFixed(1)}s`);
}
