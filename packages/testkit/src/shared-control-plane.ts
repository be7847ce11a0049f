import type { ControlPlaneConnection } from "./control-plane.js";

/** The environment variable through which jest's globalSetup hands the shared plane to test workers. */
export const controlPlaneVariable = "CAPTF_CONTROL_PLANE";

/**
 * The control plane jest's globalSetup started for this run. Use inside
 * `describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], …)`; the project's
 * jest config must list `packages/testkit/jest-global-setup.mjs` as its globalSetup.
 */
export function sharedControlPlane(): ControlPlaneConnection {
  const raw = process.env[controlPlaneVariable];
  if (!raw) {
    throw new Error(
      "no shared control plane: add globalSetup/globalTeardown from packages/testkit (jest-global-setup.mjs) to this project's " +
        "jest.config.js",
    );
  }
  return JSON.parse(raw) as ControlPlaneConnection;
}
