// Linting an image: resolve the reference, pick the platform(s), flatten each one's layers, run the
// image checks and the module checks on /captf/module, and clean up the temporary directory.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix, relative } from "node:path";
import type { Role } from "@captf/contract/roles";
import { checkIds } from "../checks/ids.js";
import type { Finding } from "../findings.js";
import type { ImageTarget } from "../format/report.js";
import { lintModule } from "../lint-module.js";
import type { LoadedModule } from "../module/load.js";
import { configSet } from "../module/load.js";
import { hasModule, runImageChecks, type ImageConfig, type RequiredProvider } from "./checks.js";
import { flattenLayers, moduleDir, resolvePath, within, type Filesystem } from "./filesystem.js";
import { layoutArchiveSource, layoutDirectorySource } from "./layout.js";
import { checkSignature } from "./signature.js";
import type { TrustedKey } from "@captf/contract/signatures";
import {
  capacityLabel,
  findCredentials,
  ImageReadError,
  ImageReferenceError,
  isIndex,
  isManifest,
  nodeInfoLabel,
  parseDocument,
  parseRegistryReference,
  readJsonBlob,
  RegistrySource,
  type Descriptor,
  type ImageSource,
  type ManifestDocument,
  type Platform,
} from "@captf/contract/oci";

export const defaultPlatform = "linux/amd64";

export interface ImageLintOptions {
  readonly ref: string;
  readonly role: Role;
  readonly contract: string;
  /** os/arch[/variant]; when given, a single-platform image for another platform is a finding. */
  readonly platform: string | undefined;
  readonly allPlatforms: boolean;
  readonly insecure: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `--key`: the image's digest must carry a cosign signature by one of them (check image/signature). */
  readonly keys?: readonly TrustedKey[];
}

export interface ImageLint {
  readonly target: ImageTarget;
  readonly fileSet: "terraform" | "opentofu" | "";
  readonly findings: Finding[];
}

export function parsePlatform(text: string): Platform {
  const [os, architecture, variant, extra] = text.split("/");
  if (!os || !architecture || extra !== undefined)
    throw new ImageReferenceError(`invalid platform ${JSON.stringify(text)}: use os/arch[/variant], e.g. linux/arm64`);
  return { os, architecture, ...(variant ? { variant } : {}) };
}

export function formatPlatform(p: Platform): string {
  return [p.os, p.architecture, p.variant].filter(Boolean).join("/");
}

function satisfies(have: Platform, want: Platform): boolean {
  return have.os === want.os && have.architecture === want.architecture && (!want.variant || have.variant === want.variant);
}

export function openSource(ref: string, insecure: boolean, env: ImageLintOptions["env"]): ImageSource {
  if (ref.startsWith("oci:")) return layoutDirectorySource(ref.slice(4));
  if (ref.startsWith("oci-archive:")) return layoutArchiveSource(ref.slice(12));
  const reference = parseRegistryReference(ref.replace(/^docker:\/\//, ""));
  return new RegistrySource(reference, {
    insecure,
    credentials: findCredentials(reference.registry, env),
    credentialsOrigin: "the docker or podman auth files",
  });
}

function imageConfig(raw: unknown): ImageConfig {
  const c = raw as {
    os?: string;
    architecture?: string;
    variant?: string;
    config?: { User?: string; Labels?: Record<string, string> | null; Entrypoint?: string[] | null; Cmd?: string[] | null };
  };
  return {
    os: c.os ?? "",
    architecture: c.architecture ?? "",
    ...(c.variant ? { variant: c.variant } : {}),
    user: c.config?.User ?? "",
    labels: c.config?.Labels ?? {},
    entrypoint: c.config?.Entrypoint ?? [],
    cmd: c.config?.Cmd ?? [],
  };
}

interface Candidate {
  readonly platform: Platform;
  readonly manifest: ManifestDocument;
  readonly config: ImageConfig;
}

async function candidate(source: ImageSource, bytes: Buffer, what: string): Promise<Candidate> {
  const manifest = parseDocument(bytes, what);
  if (!manifest.config) throw new ImageReadError(`${what} has no config`);
  const config = imageConfig(await readJsonBlob(source, manifest.config));
  return {
    platform: { os: config.os, architecture: config.architecture, ...(config.variant ? { variant: config.variant } : {}) },
    manifest,
    config,
  };
}

/** Every platform image of an index, nested indexes walked, attestations (unknown/unknown) skipped. */
async function indexCandidates(source: ImageSource, bytes: Buffer, depth = 0): Promise<{ platform: Platform; descriptor: Descriptor }[]> {
  if (depth > 4) throw new ImageReadError("image indexes nest too deeply");
  const out: { platform: Platform; descriptor: Descriptor }[] = [];
  for (const d of parseDocument(bytes, "the index").manifests ?? []) {
    if (isIndex(d.mediaType)) {
      out.push(...(await indexCandidates(source, (await source.manifest(d)).bytes, depth + 1)));
    } else if (isManifest(d.mediaType) || d.mediaType === undefined) {
      if (d.platform?.os === "unknown") continue;
      if (d.platform) {
        out.push({ platform: d.platform, descriptor: d });
      } else {
        const c = await candidate(source, (await source.manifest(d)).bytes, `manifest ${d.digest}`);
        out.push({ platform: c.platform, descriptor: d });
      }
    }
  }
  return out;
}

/** Writes /captf/module's files, and links that stay inside it, under `dir`. */
function writeModuleTree(fs: Filesystem, dir: string): void {
  for (const entry of fs.entries.values()) {
    if (entry.path === moduleDir || !within(entry.path, moduleDir)) continue;
    const target = join(dir, ...entry.path.slice(moduleDir.length + 1).split("/"));
    if (!target.startsWith(dir)) continue;
    if (entry.type === "dir") {
      mkdirSync(target, { recursive: true });
    } else if (entry.type === "file") {
      mkdirSync(join(target, ".."), { recursive: true });
      writeFileSync(target, fs.contents.get(entry.path) ?? Buffer.alloc(0));
    } else if (entry.type === "symlink" || entry.type === "hardlink") {
      const resolved = resolvePath(fs, entry.path);
      if (!resolved || !within(resolved.path, moduleDir)) continue;
      mkdirSync(join(target, ".."), { recursive: true });
      if (resolved.entry.type === "file") writeFileSync(target, fs.contents.get(resolved.path) ?? Buffer.alloc(0));
      else if (resolved.entry.type === "dir")
        symlinkSync(relative(join(target, ".."), join(dir, ...resolved.path.slice(moduleDir.length + 1).split("/"))) || ".", target);
    }
  }
}

function requiredProviders(module: LoadedModule): RequiredProvider[] {
  const seen = new Map<string, RequiredProvider>();
  const visit = (m: LoadedModule): void => {
    const set = configSet(m);
    for (const [local, p] of set.requiredProviders) seen.set(`${local}|${p.source ?? ""}`, { local, source: p.source });
    for (const block of [...set.resources, ...set.dataSources]) {
      const explicit = block.body.attributes
        .find((a) => a.name === "provider")
        ?.expr.text.split(".")[0]
        ?.trim();
      const local = explicit || block.labels[0]!.split("_")[0]!;
      if (![...seen.values()].some((p) => p.local === local)) seen.set(`${local}|`, { local, source: undefined });
    }
    for (const n of m.nested) visit(n.module);
  };
  visit(module);
  return [...seen.values()].sort((a, b) => (a.local < b.local ? -1 : 1));
}

async function lintPlatform(
  source: ImageSource,
  c: Candidate,
  o: ImageLintOptions,
): Promise<{ findings: Finding[]; fileSet: ImageLint["fileSet"] }> {
  const layers = c.manifest.layers ?? [];
  const fs = await flattenLayers(layers.length, (i) => source.blob(layers[i]!));
  let moduleFindings: Finding[] = [];
  let providers: RequiredProvider[] | undefined;
  let fileSet: ImageLint["fileSet"] = "";
  if (hasModule(fs)) {
    const root = mkdtempSync(join(tmpdir(), "tfcapi-lint-image-"));
    try {
      const dir = join(root, "module");
      mkdirSync(dir);
      writeModuleTree(fs, dir);
      const result = await lintModule(dir, o.role);
      moduleFindings = result.findings.map((f) => ({ ...f, file: f.file === "" ? moduleDir : posix.join(moduleDir, f.file) }));
      if (result.ok) {
        providers = requiredProviders(result.module);
        fileSet = result.fileSet;
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  const findings = runImageChecks({ fs, config: c.config, role: o.role, contract: o.contract, requiredProviders: providers });
  return { findings: [...findings, ...moduleFindings], fileSet };
}

export async function lintImage(o: ImageLintOptions): Promise<ImageLint> {
  const want = parsePlatform(o.platform ?? defaultPlatform);
  const source = openSource(o.ref, o.insecure, o.env);
  const root = await source.root();
  const target = { ref: o.ref, digest: root.digest, platforms: [] as string[] };
  const platformFinding = (message: string): ImageLint => ({
    target,
    fileSet: "",
    findings: [
      {
        id: checkIds.imagePlatform,
        severity: "error",
        file: "",
        line: 0,
        column: 0,
        message,
        fix: "build the image for that platform, or lint another with --platform",
      },
    ],
  });
  let selected: Candidate[];
  if (isIndex(root.mediaType)) {
    const all = await indexCandidates(source, root.bytes);
    const chosen = o.allPlatforms ? all : all.filter((c) => satisfies(c.platform, want)).slice(0, 1);
    if (chosen.length === 0)
      return platformFinding(
        `the index has no manifest for ${formatPlatform(want)} (it has ${all.map((c) => formatPlatform(c.platform)).join(", ") || "none"})`,
      );
    selected = [];
    for (const c of chosen)
      selected.push(await candidate(source, (await source.manifest(c.descriptor)).bytes, `manifest ${c.descriptor.digest}`));
  } else if (isManifest(root.mediaType)) {
    const single = await candidate(source, root.bytes, "the manifest");
    if (o.platform !== undefined && !o.allPlatforms && !satisfies(single.platform, want)) {
      return platformFinding(`the image is for ${formatPlatform(single.platform)}, not ${formatPlatform(want)}`);
    }
    selected = [single];
  } else {
    throw new ImageReadError(`unsupported manifest media type ${JSON.stringify(root.mediaType)}`);
  }
  const findings: Finding[] = [];
  const unsigned = o.keys?.length ? await checkSignature(source, root, o.keys) : undefined;
  if (unsigned) findings.push(unsigned);
  const capacities = new Set<string>();
  let fileSet: ImageLint["fileSet"] = "";
  for (const c of selected) {
    const name = formatPlatform(c.platform);
    const result = await lintPlatform(source, c, o);
    findings.push(...(o.allPlatforms ? result.findings.map((f) => ({ ...f, message: `[${name}] ${f.message}` })) : result.findings));
    capacities.add(`${c.config.labels[capacityLabel] ?? ""}\u0000${c.config.labels[nodeInfoLabel] ?? ""}`);
    target.platforms.push(name);
    fileSet = result.fileSet || fileSet;
  }
  if (capacities.size > 1) {
    findings.push({
      id: checkIds.imageLabelCapacity,
      severity: "warning",
      file: "",
      line: 0,
      column: 0,
      message: "the capacity labels differ between platforms: a template sizes nodes from one of them",
      fix: "set the same capacity labels on every platform",
    });
  }
  return { target, fileSet, findings };
}
