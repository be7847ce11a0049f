// Registry references: [host[:port]/]path[:tag][@digest], with Docker Hub's defaults.
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

const component = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestPattern = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;

export function parseRegistryReference(ref: string): RegistryReference {
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!digestPattern.test(digest)) throw new ImageReferenceError(`invalid digest in ${ref}`);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagPattern.test(tag)) throw new ImageReferenceError(`invalid tag in ${ref}`);
  }
  const parts = rest.split("/");
  let registry = "docker.io";
  if (parts.length > 1 && (parts[0]!.includes(".") || parts[0]!.includes(":") || parts[0] === "localhost")) registry = parts.shift()!;
  if (registry === "docker.io" && parts.length === 1) parts.unshift("library");
  if (parts.length === 0 || !parts.every((p) => component.test(p))) throw new ImageReferenceError(`invalid repository in ${ref}: use lowercase letters, digits and separators`);
  if (tag === undefined && digest === undefined) tag = "latest";
  return { apiHost: registry === "docker.io" ? "registry-1.docker.io" : registry, registry, repository: parts.join("/"), tag, digest };
}

/** Whether the registry host is this machine: plain HTTP is allowed there without --insecure. */
export function isLoopback(host: string): boolean {
  const name = host.startsWith("[") ? host.slice(1, host.indexOf("]")) : host.replace(/:\d+$/, "");
  if (name === "localhost") return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  return name === "::1";
}
