// The npm half of a release: each public package packed as the registry gets it, and refused when what it ships
// imports a package it does not list in `dependencies`, or lists one nothing it ships imports. scripts/release.mjs
// packs with it; release-plan.test.ts packs every public package with it, and the dry run's test reads its tarballs.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";

/**
 * `manifest` as the registry gets it: `workspace:` specifiers replaced by the workspace packages'
 * versions (as pnpm publish does) and no `@captf/source` export condition (consumers never set it; src/ does not ship).
 */
export function publishedManifest(manifest, versions) {
  const strip = (value) =>
    value && typeof value === "object"
      ? Object.fromEntries(
          Object.entries(value)
            .filter(([key]) => key !== "@captf/source")
            .map(([key, inner]) => [key, strip(inner)]),
        )
      : value;
  const resolveWorkspace = (dependencies) =>
    dependencies &&
    Object.fromEntries(
      Object.entries(dependencies).map(([name, specifier]) => {
        if (!specifier.startsWith("workspace:")) return [name, specifier];
        const range = specifier.slice("workspace:".length);
        return [name, range === "*" ? versions[name] : range === "^" || range === "~" ? `${range}${versions[name]}` : range];
      }),
    );
  const published = { ...manifest };
  if (manifest.exports) published.exports = strip(manifest.exports);
  for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"])
    if (manifest[field]) published[field] = resolveWorkspace(manifest[field]);
  return published;
}

const builtins = new Set(builtinModules);

/**
 * The packages a JavaScript or declaration file imports: static imports and exports, side-effect imports, dynamic
 * import() and require() of a literal, `import("x").T` types; only a specifier's package part, no Node built-in.
 */
export function importedPackages(text) {
  const specifiers = [
    ...text.matchAll(
      /(?:(?<![\w$.-])from\s*|(?<![\w$.-])import\s*\(\s*|(?<![\w$.-])require\s*\(\s*|^\s*import\s+)["']([^"'./\s][^"'\s]*)["']/gm,
    ),
  ].map((match) => match[1]);
  return new Set(
    specifiers
      .filter((specifier) => !specifier.startsWith("node:"))
      .map((specifier) =>
        specifier
          .split("/")
          .slice(0, specifier.startsWith("@") ? 2 : 1)
          .join("/"),
      )
      .filter((name) => !builtins.has(name)),
  );
}

/** The files of a package directory a consumer's node or tsc reads: JavaScript and declarations, not node_modules. */
export function shippedCode(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(m?js|cjs|d\.m?ts)$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => !file.slice(dir.length).split("/").includes("node_modules"));
}

/**
 * How `manifest`'s runtime dependencies (dependencies, peerDependencies, optionalDependencies) differ from what `texts`
 * import: `unused` listed and never imported (npm installs them for nothing), `undeclared` imported and not listed (the
 * package fails for its users). The package's own name is neither.
 */
export function dependencyMismatch(manifest, texts) {
  const imported = new Set(texts.flatMap((text) => [...importedPackages(text)]));
  imported.delete(manifest.name);
  const declared = new Set(
    ["dependencies", "peerDependencies", "optionalDependencies"].flatMap((field) => Object.keys(manifest[field] ?? {})),
  );
  return {
    unused: [...declared].filter((name) => !imported.has(name)).sort(),
    undeclared: [...imported].filter((name) => !declared.has(name)).sort(),
  };
}

/** A refusal of a package whose dependencies are not what it imports; undefined when they are. */
export function dependencyRefusal(name, mismatch) {
  const parts = [
    ...(mismatch.unused.length > 0 ? [`lists ${mismatch.unused.join(", ")} in dependencies, which nothing it ships imports`] : []),
    ...(mismatch.undeclared.length > 0 ? [`imports ${mismatch.undeclared.join(", ")}, which its dependencies do not list`] : []),
  ];
  return parts.length === 0 ? undefined : `${name} ${parts.join(", and ")}`;
}

/**
 * Packs the workspace package at `repoDir/dir` as published (publishedManifest, its `files` with README.md and LICENSE)
 * into `npmDir` with `pnpm pack`, staging it under `work`; throws when its dependencies are not what it ships imports.
 * Returns the staged copy's directory and its published manifest.
 */
export function packPublicPackage({ repoDir, dir, manifest, versions, work, npmDir }) {
  const copy = join(work, "npm", dir);
  mkdirSync(copy, { recursive: true });
  const published = publishedManifest(manifest, versions);
  writeFileSync(join(copy, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
  for (const entry of [...(manifest.files ?? []).filter((file) => !file.startsWith("!")), "README.md", "LICENSE"]) {
    if (/[*?]/.test(entry)) throw new Error(`release: ${manifest.name}'s files entry "${entry}" is a glob; list directories`);
    if (existsSync(join(repoDir, dir, entry))) cpSync(join(repoDir, dir, entry), join(copy, entry), { recursive: true });
  }
  const refusal = dependencyRefusal(
    manifest.name,
    dependencyMismatch(
      published,
      shippedCode(copy).map((file) => readFileSync(file, "utf8")),
    ),
  );
  if (refusal) throw new Error(`release: ${refusal}`);
  mkdirSync(npmDir, { recursive: true });
  execFileSync("pnpm", ["pack", "--pack-destination", npmDir], { cwd: copy, stdio: ["ignore", "ignore", "pipe"] });
  return { copy, published };
}
