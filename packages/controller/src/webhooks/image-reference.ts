/**
 * Syntax of an OCI image reference, as container runtimes normalize it:
 * `[registry[:port]/]repository[:tag][@algorithm:hex]`. Only the syntax is checked; whether the
 * registry or the image exist is the Job's business.
 */

const domainComponent = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const domainPattern = new RegExp(`^(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?$`);
const pathComponentPattern = /^[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestPattern = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const digestLengths: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };
const maxNameLength = 255;

/** Why `reference` is not a valid image reference, or undefined when it is. */
export function imageReferenceProblem(reference: string): string | undefined {
  if (reference.length === 0) return "it is empty";
  if (reference !== reference.trim()) return "it has leading or trailing whitespace";
  let rest = reference;
  const at = rest.indexOf("@");
  if (at >= 0) {
    const digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!digestPattern.test(digest)) return `digest "${digest}" is not <algorithm>:<hex>`;
    const [algorithm, hex] = digest.split(":") as [string, string];
    const length = digestLengths[algorithm];
    if (length !== undefined && hex.length !== length) return `a ${algorithm} digest has ${length} hex digits, not ${hex.length}`;
  }
  const lastSlash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > lastSlash) {
    const tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagPattern.test(tag)) return `tag "${tag}" is not valid (letters, digits, _, . and -, at most 128, not starting with . or -)`;
  }
  if (rest.length === 0) return "it names no repository";
  if (rest.length > maxNameLength) return `the repository name is longer than ${maxNameLength} characters`;
  const components = rest.split("/");
  const first = components[0]!;
  // As runtimes normalize: the first component is a registry when it looks like a host.
  const hasDomain = components.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost" || first !== first.toLowerCase());
  if (hasDomain) {
    if (!domainPattern.test(first)) return `registry "${first}" is not a valid host[:port]`;
    components.shift();
  }
  for (const component of components) {
    if (component !== component.toLowerCase()) return "the repository name must be lowercase";
    if (!pathComponentPattern.test(component)) return `repository path component "${component}" is not valid (lowercase letters and digits, separated by ., _, __ or -)`;
  }
  if (!hasDomain && at < 0 && colon <= lastSlash && /^[a-f0-9]{64}$/.test(rest)) return "a 64-hex-digit identifier is not a repository name; use <repository>@sha256:<digest>";
  return undefined;
}
