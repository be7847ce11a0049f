import { describe, expect, it } from "@jest/globals";
import { imageReferenceProblem } from "./image-reference.js";

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
