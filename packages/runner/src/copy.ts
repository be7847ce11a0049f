import { chmod, copyFile, lstat, mkdir, readdir, readlink, stat, symlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { relocateNode } from "./relocate.js";

/**
 * The files every runner bundle holds: the patched interpreter-relocated node, the runner itself (runner.mjs loads runner.cjs),
 * and the broker sidecar's entry.
 */
export const bundleEntryFiles = ["node", "runner.mjs", "runner.cjs", "broker.cjs"] as const;

export class NotABundleError extends Error {
  constructor(dir: string) {
    super(
      `${dir} is not a runner bundle (it needs ${bundleEntryFiles.join(" and ")}): build one with ` +
        `packages/runner/scripts/build-bundle.mjs, or pass --from <bundle dir>`,
    );
    this.name = "NotABundleError";
  }
}

async function copyTree(from: string, to: string, totals: { files: number; bytes: number }): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      await copyTree(source, target, totals);
    } else if (entry.isSymbolicLink()) {
      await symlink(await readlink(source), target).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
    } else if (entry.isFile()) {
      await copyFile(source, target);
      const info = await lstat(source);
      await chmod(target, info.mode & 0o7777);
      totals.files++;
      totals.bytes += info.size;
    }
  }
}

/**
 * Copies the runner bundle (node, its libraries under lib/, the runner files) into `dest`, and points
 * the copied node at the loader and libraries in `dest`/lib: how the Job's init container puts the
 * runner into the shared /captf/bin volume from wherever its image keeps the bundle.
 */
export async function copyBundle(from: string, dest: string): Promise<{ files: number; bytes: number }> {
  for (const name of bundleEntryFiles) {
    const info = await stat(join(from, name)).catch(() => undefined);
    if (!info?.isFile()) throw new NotABundleError(from);
  }
  const totals = { files: 0, bytes: 0 };
  await copyTree(from, dest, totals);
  await relocateNode(join(dest, "node"), resolve(dest));
  return totals;
}
