import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { requireTool } from "./tools.js";

/** The Cluster API release whose CRDs the tests install: the contract captf implements (v1beta2). */
export const clusterApiVersion = "v1.14.2";

/** The core Cluster API CRDs tests need, by file name under core/config/crd/bases. */
export const clusterApiCrdFiles = [
  "cluster.x-k8s.io_clusters.yaml",
  "cluster.x-k8s.io_machines.yaml",
  "cluster.x-k8s.io_machinepools.yaml",
] as const;

/**
 * Paths of the real Cluster API CRDs, from the Cluster API Go module (downloaded once into the Go
 * module cache through the module proxy; later calls read the cache).
 */
export function clusterApiCrdPaths(): string[] {
  const moduleDir = clusterApiModuleDirectory();
  const paths = clusterApiCrdFiles.map((file) => join(moduleDir, "core", "config", "crd", "bases", file));
  for (const path of paths) if (!existsSync(path)) throw new Error(`the Cluster API module has no ${path}`);
  return paths;
}

/** The Cluster API module's source tree (CRDs, webhook manifests), from the Go module cache. */
export function clusterApiModuleDirectory(): string {
  const go = requireTool("go");
  const output = execFileSync(go, ["mod", "download", "-json", `sigs.k8s.io/cluster-api@${clusterApiVersion}`], {
    encoding: "utf8",
    env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const download = JSON.parse(output) as { Dir?: string; Error?: string };
  if (!download.Dir)
    throw new Error(`go mod download sigs.k8s.io/cluster-api@${clusterApiVersion} failed: ${download.Error ?? "no directory"}`);
  return download.Dir;
}
