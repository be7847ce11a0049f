/** Every file generated from the TypeBox kinds, and which of them are stale on disk. */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { apiReferencePath, renderApiReference } from "./api-reference.js";
import { renderCrdFiles, type GeneratedFile } from "./crds.js";

/** Where the CRDs live, relative to the package root. */
export const crdDirectory = "config/crd";

/** The CRDs and the API reference, paths relative to the package root. */
export function generatedFiles(): GeneratedFile[] {
  return [...renderCrdFiles(), { path: apiReferencePath, content: renderApiReference() }];
}

/** Generated files whose content on disk differs or is missing, plus CRD files no kind generates. */
export function staleGeneratedFiles(packageRoot: string): string[] {
  const files = generatedFiles();
  const stale = files.filter((file) => {
    const target = join(packageRoot, file.path);
    return !existsSync(target) || readFileSync(target, "utf8") !== file.content;
  });
  const expected = new Set(files.map((file) => file.path));
  const crdDir = join(packageRoot, crdDirectory);
  const extra = existsSync(crdDir)
    ? readdirSync(crdDir)
        .map((name) => `${crdDirectory}/${name}`)
        .filter((path) => !expected.has(path))
    : [];
  return [...stale.map((file) => file.path), ...extra.map((path) => `${path} (no kind generates it)`)];
}
