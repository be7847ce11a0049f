// The two arguments of `captf-module push`: an image in an OCI layout, and where it goes.
import { parseRegistryReference, splitImageReference, type RegistryReference } from "@captf/contract/oci";
import { UsageError } from "../io.js";

/** An image tag as registries accept it (the distribution grammar). */
export const tagPattern = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** An image of an OCI layout directory, named by its `org.opencontainers.image.ref.name`. */
export interface LayoutSource {
  readonly layout: string;
  readonly tag: string;
}

/**
 * `<layout>:<tag>` or `oci:<layout>:<tag>` (skopeo's form): the tag is what follows the last colon, so a layout path
 * may hold colons of its own.
 */
export function parseLayoutSource(value: string): LayoutSource {
  const rest = value.startsWith("oci:") ? value.slice(4) : value;
  const colon = rest.lastIndexOf(":");
  const tag = colon < 0 ? "" : rest.slice(colon + 1);
  const layout = colon < 0 ? rest : rest.slice(0, colon);
  if (layout === "" || tag === "" || tag.includes("/"))
    throw new UsageError(`${value}: name the image as <layout>:<tag>, e.g. ./image:v0.1.0 (the --out and --tag of build)`);
  if (!tagPattern.test(tag)) throw new UsageError(`${value}: tag ${tag} is 1 to 128 letters, digits, _ . and -, not starting with . or -`);
  return { layout, tag };
}

/**
 * `[docker://]<registry>/<repository>:<tag>`: the registry must be named (a push to Docker Hub writes docker.io/…),
 * and a tag given; a digest cannot be pushed to, it is what the push reports.
 */
export function parseDestination(value: string): RegistryReference & { readonly tag: string } {
  const ref = value.startsWith("docker://") ? value.slice("docker://".length) : value;
  const split = splitImageReference(ref);
  if (split.problem !== undefined) throw new UsageError(`${value} is not an image reference: ${split.problem}`);
  if (split.parts.domain === undefined)
    throw new UsageError(`${value}: name the registry, e.g. registry.example.com/modules/my-machine:v0.1.0 (docker.io/… for Docker Hub)`);
  if (split.parts.digest !== undefined) throw new UsageError(`${value}: push to a tag, not a digest (the push reports the digest)`);
  if (split.parts.tag === undefined) throw new UsageError(`${value}: name the tag to push to, e.g. ${ref}:v0.1.0`);
  const parsed = parseRegistryReference(ref);
  return { ...parsed, tag: split.parts.tag };
}
