// Image references: their one grammar, and the registry coordinates read from one, with Docker Hub's defaults.
import { isIP } from "node:net";
import { ImageReferenceError } from "./source.js";

export interface RegistryReference {
  /** As written in the registry API's host: registry-1.docker.io for Docker Hub. */
  readonly apiHost: string;
  /** As written in auth files and messages: docker.io for Docker Hub. */
  readonly registry: string;
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
}

/**
 * The one image-reference grammar, as container runtimes normalize a reference (distribution's
 * `ParseNormalizedNamed`, which the reference webhook applies): `[registry[:port]/]path[:tag][@algorithm:hex]`.
 * Only the syntax is checked; whether the registry or the image exist is for whoever pulls it.
 */
export interface ImageReferenceParts {
  /** The registry host[:port] the reference names; undefined for Docker Hub's short form. */
  readonly domain: string | undefined;
  /** The repository path below the registry. */
  readonly path: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
}

const domainComponent = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const domainPattern = new RegExp(`^(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`);
const pathComponentPattern = /^[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestPattern = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const digestLengths: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };
const maxNameLength = 255;

/** The reference cut at its digest (`@`) and its tag (a `:` after the last `/`), unchecked. */
function cutReference(reference: string): { name: string; tag: string | undefined; digest: string | undefined } {
  let name = reference;
  let digest: string | undefined;
  const at = name.indexOf("@");
  if (at >= 0) {
    digest = name.slice(at + 1);
    name = name.slice(0, at);
  }
  let tag: string | undefined;
  const colon = name.lastIndexOf(":");
  if (colon > name.lastIndexOf("/")) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
  }
  return { name, tag, digest };
}

/** The reference without its tag and digest: `[registry[:port]/]path`, as written. */
export function imageReferenceName(reference: string): string {
  return cutReference(reference).name;
}

/** The parts of `reference`, or why it is not a valid image reference (a message that names the fix). */
export function splitImageReference(
  reference: string,
): { parts: ImageReferenceParts; problem?: undefined } | { parts?: undefined; problem: string } {
  if (reference.length === 0) return { problem: "it is empty" };
  if (reference !== reference.trim()) return { problem: "it has leading or trailing whitespace" };
  const { name, tag, digest } = cutReference(reference);
  if (digest !== undefined) {
    if (!digestPattern.test(digest)) return { problem: `digest "${digest}" is not <algorithm>:<hex>` };
    const [algorithm, hex] = digest.split(":") as [string, string];
    const length = digestLengths[algorithm];
    if (length !== undefined && hex.length !== length)
      return { problem: `a ${algorithm} digest has ${length} hex digits, not ${hex.length}` };
  }
  if (tag !== undefined && !tagPattern.test(tag))
    return { problem: `tag "${tag}" is not valid (letters, digits, _, . and -, at most 128, not starting with . or -)` };
  if (name.length === 0) return { problem: "it names no repository" };
  if (name.length > maxNameLength) return { problem: `the repository name is longer than ${maxNameLength} characters` };
  const components = name.split("/");
  const first = components[0]!;
  // As runtimes normalize: the first component is a registry when it looks like a host.
  const domain =
    components.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost" || first !== first.toLowerCase())
      ? first
      : undefined;
  if (domain !== undefined) {
    if (!domainPattern.test(domain)) return { problem: `registry "${domain}" is not a valid host[:port]` };
    components.shift();
  }
  for (const component of components) {
    if (component !== component.toLowerCase()) return { problem: "the repository name must be lowercase" };
    if (!pathComponentPattern.test(component))
      return {
        problem: `repository path component "${component}" is not valid (lowercase letters and digits, separated by ., _, __ or -)`,
      };
  }
  if (domain === undefined && digest === undefined && tag === undefined && /^[a-f0-9]{64}$/.test(name))
    return { problem: "a 64-hex-digit identifier is not a repository name; use <repository>@sha256:<digest>" };
  return { parts: { domain, path: components.join("/"), tag, digest } };
}

/** Why `reference` is not a valid image reference, or undefined when it is. */
export function imageReferenceProblem(reference: string): string | undefined {
  return splitImageReference(reference).problem;
}

/** The registry, repository, tag and digest to read `ref` from over the distribution API, with Docker Hub's defaults. */
export function parseRegistryReference(ref: string): RegistryReference {
  const split = splitImageReference(ref);
  if (split.problem !== undefined) throw new ImageReferenceError(`invalid image reference ${ref}: ${split.problem}`);
  const { domain, path, digest } = split.parts;
  const registry = domain ?? "docker.io";
  const repository = registry === "docker.io" && !path.includes("/") ? `library/${path}` : path;
  const tag = split.parts.tag === undefined && digest === undefined ? "latest" : split.parts.tag;
  return { apiHost: registry === "docker.io" ? "registry-1.docker.io" : registry, registry, repository, tag, digest };
}

/** Whether the registry host is this machine: plain HTTP is allowed there without --insecure. */
export function isLoopback(host: string): boolean {
  const name = host.startsWith("[") ? host.slice(1, host.indexOf("]")) : host.replace(/:\d+$/, "");
  if (name === "localhost") return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  return name === "::1";
}
