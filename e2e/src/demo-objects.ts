// The demo's objects: e2e/manifests/demo/*.yaml (they double as the docs' examples), with the
// loopback registry and the canary values filled in.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type * as k8s from "@kubernetes/client-node";
import { loadManifest } from "./apply.js";
import type { CaptfImages } from "./captf-install.js";

export const demoNamespace = "demo";
export const demoClusterName = "demo";
export const demoManifestDirectory = fileURLToPath(new URL("../manifests/demo/", import.meta.url));

/** Values a secret must never leave its Secret with: the e2e looks for them everywhere else. */
export interface DemoSecrets {
  credential: string;
  variable: string;
  bootstrap: string;
}

export function demoVariables(images: CaptfImages, secrets: DemoSecrets): Record<string, string> {
  return {
    CAPTF_MODULE_REGISTRY: images.modules.cluster.slice(0, images.modules.cluster.indexOf("/")),
    CAPTF_DEMO_CREDENTIAL: secrets.credential,
    CAPTF_DEMO_VARIABLE: secrets.variable,
    CAPTF_DEMO_BOOTSTRAP: secrets.bootstrap,
  };
}

/** Every object of the demo, file by file in name order (identity, cluster, deployment, pool). */
export function demoObjects(variables: Readonly<Record<string, string>>): k8s.KubernetesObject[] {
  return readdirSync(demoManifestDirectory)
    .filter((name) => name.endsWith(".yaml"))
    .sort()
    .flatMap((name) => loadManifest(join(demoManifestDirectory, name), variables));
}
