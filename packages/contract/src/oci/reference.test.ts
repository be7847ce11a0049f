import { describe, expect, it } from "@jest/globals";
import { imageReferenceName, imageReferenceProblem, parseRegistryReference, splitImageReference } from "./reference.js";
import { ImageReferenceError } from "./source.js";

const sha256 = "3f1c0e9d5a7b2c64e8f1a0b9d7c3e5f2a4b6c8d0e1f3a5b7c9d1e3f5a7b9c1d3";

describe("imageReferenceProblem", () => {
  it.each([
    "ghcr.io/captf-io/module-images/noop-cluster:v0.1.0-opentofu",
    "ubuntu",
    "library/ubuntu:24.04",
    "localhost/module:dev",
    "localhost:5000/team/module",
    "registry.example.com:5000/a/b/c:latest",
    "[fd00::1]:5000/module:v1",
    `ghcr.io/x/module@sha256:${sha256}`,
    `ghcr.io/x/module:v1@sha256:${sha256}`,
    "quay.io/a_b/c__d/e-f/g.h:T_1.2-3",
  ])("accepts %s", (reference) => {
    expect(imageReferenceProblem(reference)).toBeUndefined();
  });

  it.each([
    ["", "it is empty"],
    [" ghcr.io/x/y:v1", "leading or trailing whitespace"],
    ["ghcr.io/X/module:v1", "the repository name must be lowercase"],
    ["Ubuntu", "the repository name must be lowercase"],
    ["ghcr.io/x/module:-bad", 'tag "-bad" is not valid'],
    [`ghcr.io/x/module:${"t".repeat(129)}`, "is not valid"],
    ["ghcr.io/x/module@sha256:abc", 'digest "sha256:abc" is not <algorithm>:<hex>'],
    [`ghcr.io/x/module@sha256:${sha256}00`, "a sha256 digest has 64 hex digits, not 66"],
    ["ghcr.io/x//module", 'repository path component "" is not valid'],
    ["ghcr.io/x/-module", 'repository path component "-module" is not valid'],
    ["ghcr..io/x/module", 'registry "ghcr..io" is not a valid host[:port]'],
    [":v1", "it names no repository"],
    [sha256, "a 64-hex-digit identifier is not a repository name"],
    [`ghcr.io/${"a".repeat(256)}`, "longer than 255 characters"],
  ])("refuses %j: %s", (reference, problem) => {
    expect(imageReferenceProblem(reference)).toContain(problem);
  });
});

describe("splitImageReference", () => {
  it.each([
    ["ubuntu", { domain: undefined, path: "ubuntu", tag: undefined, digest: undefined }],
    ["localhost:5000/team/module:v1", { domain: "localhost:5000", path: "team/module", tag: "v1", digest: undefined }],
    [`ghcr.io/x/module:v1@sha256:${sha256}`, { domain: "ghcr.io", path: "x/module", tag: "v1", digest: `sha256:${sha256}` }],
    ["Registry/module", { domain: "Registry", path: "module", tag: undefined, digest: undefined }],
  ])("splits %s", (reference, parts) => {
    expect(splitImageReference(reference)).toEqual({ parts });
  });
});

describe("imageReferenceName", () => {
  it.each([
    ["registry.example:5000/m:v1", "registry.example:5000/m"],
    ["registry.example:5000/m", "registry.example:5000/m"],
    [`registry.example/m:v1@sha256:${sha256}`, "registry.example/m"],
    ["m", "m"],
  ])("cuts the tag and digest of %s", (reference, name) => {
    expect(imageReferenceName(reference)).toBe(name);
  });
});

describe("parseRegistryReference", () => {
  it.each([
    ["ubuntu", { apiHost: "registry-1.docker.io", registry: "docker.io", repository: "library/ubuntu", tag: "latest", digest: undefined }],
    [
      "docker.io/team/module:v2",
      { apiHost: "registry-1.docker.io", registry: "docker.io", repository: "team/module", tag: "v2", digest: undefined },
    ],
    [
      `127.0.0.1:5000/captf/m@sha256:${sha256}`,
      { apiHost: "127.0.0.1:5000", registry: "127.0.0.1:5000", repository: "captf/m", tag: undefined, digest: `sha256:${sha256}` },
    ],
  ])("reads %s with Docker Hub's defaults", (reference, parsed) => {
    expect(parseRegistryReference(reference)).toEqual(parsed);
  });

  it("refuses what the grammar refuses, saying why", () => {
    expect(() => parseRegistryReference("ghcr.io/x/module@sha256:abc")).toThrow(ImageReferenceError);
    expect(() => parseRegistryReference("ghcr.io/X/module:v1")).toThrow(
      "invalid image reference ghcr.io/X/module:v1: the repository name must be lowercase",
    );
  });
});
