// The whole Job path with nothing stood in, for suites that reconcile one machine through it: the no-op
// machine module image in a loopback registry, and a chroot kubelet whose init containers copy the runner
// bundle out of the manager image and whose runners reach the plane with in-cluster credentials.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { noopModuleDirectory } from "@captf/module-noop";
import {
  buildModuleImage,
  prepareRunnerImageRoot,
  pushImage,
  requireTool,
  sharedControlPlane,
  startChrootKubelet,
  startLocalRegistry,
  type ChrootKubelet,
  type LocalRegistry,
} from "@captf/testkit";
import type { PlaneClients } from "./plane.test-support.js";

/** The manager image the Jobs name: the kubelet resolves it to the runner bundle built here. */
export const runnerImage = "captf-controller:e2e";

export interface NoopMachineKubelet {
  /** The no-op machine module image, in the loopback registry. */
  image: string;
  /** Stops the kubelet and the registry and removes the work directory. */
  stop(): Promise<void>;
}

/** Builds and pushes the no-op machine image and starts a chroot kubelet (node `<nodePrefix>-…`) for the namespace's Pods. */
export async function startNoopMachineKubelet(plane: PlaneClients, namespace: string, nodePrefix: string): Promise<NoopMachineKubelet> {
  const work = mkdtempSync(join(tmpdir(), `captf-${nodePrefix}-`));
  let registry: LocalRegistry | undefined;
  let kubelet: ChrootKubelet | undefined;
  const stop = async () => {
    await kubelet?.stop();
    await registry?.stop();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    registry = await startLocalRegistry();
    buildModuleImage(join(work, "layout"), "v0.1.0", {
      moduleDir: noopModuleDirectory("machine"),
      runtime: requireTool("tofu"),
      runtimeVersion: "1.12.6",
      role: "machine",
    });
    const image = `${registry.host}/captf/noop-machine:v0.1.0`;
    pushImage(join(work, "layout"), "v0.1.0", image);
    const bundle = join(work, "bundle");
    execFileSync(process.execPath, [fileURLToPath(new URL("../../../runner/scripts/build-bundle.mjs", import.meta.url)), "--out", bundle], {
      stdio: "pipe",
    });
    const runnerRoot = prepareRunnerImageRoot(join(work, "runner-image"), bundle);
    kubelet = await startChrootKubelet({
      kubeconfigPath: plane.kubeconfigPath,
      nodeName: `${nodePrefix}-${Date.now().toString(36)}`,
      namespaces: [namespace],
      imageResolver: (reference) => (reference === runnerImage ? runnerRoot : undefined),
      // The runner's state and events go through this token; a real install binds captf-runner's Role.
      serviceAccountTokens: { token: sharedControlPlane().token },
    });
    return { image, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
