import { describe, expect, it } from "@jest/globals";
import { UsageError } from "../io.js";
import { parseDestination, parseLayoutSource } from "./reference.js";

describe("parseLayoutSource", () => {
  it.each([
    ["./image:v0.1.0", { layout: "./image", tag: "v0.1.0" }],
    ["oci:./image:v0.1.0", { layout: "./image", tag: "v0.1.0" }],
    ["/tmp/a:b/image:v1-amd64", { layout: "/tmp/a:b/image", tag: "v1-amd64" }],
  ])("reads %s as a layout and the tag after its last colon", (value, expected) => {
    expect(parseLayoutSource(value)).toEqual(expected);
  });

  it.each([["./image"], ["./image:"], [":v1"], ["./image:.hidden"], ["./a:b/c"]])("refuses %s, showing the form", (value) => {
    expect(() => parseLayoutSource(value)).toThrow(UsageError);
    expect(() => parseLayoutSource(value)).toThrow(/<layout>:<tag>|is 1 to 128/);
  });
});

describe("parseDestination", () => {
  it("reads the registry, repository and tag; docker:// is skopeo's prefix and is allowed", () => {
    expect(parseDestination("registry.example.com/modules/my-machine:v0.1.0")).toMatchObject({
      apiHost: "registry.example.com",
      registry: "registry.example.com",
      repository: "modules/my-machine",
      tag: "v0.1.0",
    });
    expect(parseDestination("docker://127.0.0.1:5000/m:v1")).toMatchObject({ apiHost: "127.0.0.1:5000", repository: "m", tag: "v1" });
    expect(parseDestination("localhost:5000/a/b:t")).toMatchObject({ registry: "localhost:5000", repository: "a/b" });
  });

  it("maps docker.io to Docker Hub's API host, and its one-part names to library/", () => {
    expect(parseDestination("docker.io/me/m:v1")).toMatchObject({
      apiHost: "registry-1.docker.io",
      registry: "docker.io",
      repository: "me/m",
    });
    expect(parseDestination("docker.io/m:v1")).toMatchObject({ repository: "library/m" });
  });

  it.each([
    ["my-machine:v1", /name the registry/],
    ["registry.example.com/m", /name the tag/],
    [`registry.example.com/m@sha256:${"a".repeat(64)}`, /not a digest/],
    ["registry.example.com/Modules/m:v1", /lowercase/],
    ["registry.example.com/m:-bad", /not an image reference: tag/],
  ])("refuses %s with a usage error that says why", (value, message) => {
    expect(() => parseDestination(value)).toThrow(UsageError);
    expect(() => parseDestination(value)).toThrow(message);
  });
});
