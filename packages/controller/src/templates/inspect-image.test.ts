import { describe, expect, it } from "@jest/globals";
import type { V1Secret } from "@kubernetes/client-node";
import { mediaTypes, type Descriptor } from "@captf/contract/oci";
import { ociArchitecture, pullSecretCredentials, selectPlatformManifest } from "./inspect-image.js";
import { replacing } from "./template-controller.js";

const manifest = (os: string, architecture: string, digest: string): Descriptor => ({
  mediaType: mediaTypes.ociManifest,
  digest,
  size: 1,
  platform: { os, architecture },
});

describe("selectPlatformManifest", () => {
  const attestation: Descriptor = {
    mediaType: mediaTypes.ociManifest,
    digest: "sha256:att",
    size: 1,
    platform: { os: "unknown", architecture: "unknown" },
  };
  const windows = manifest("windows", "amd64", "sha256:win");

  it("picks the linux image of the manager's architecture", () => {
    expect(
      selectPlatformManifest(
        [attestation, windows, manifest("linux", "amd64", "sha256:a"), manifest("linux", "arm64", "sha256:b")],
        "arm64",
      )?.digest,
    ).toBe("sha256:b");
  });

  it("falls back to the first linux image", () => {
    expect(
      selectPlatformManifest([windows, manifest("linux", "s390x", "sha256:s"), manifest("linux", "amd64", "sha256:a")], "arm64")?.digest,
    ).toBe("sha256:s");
  });

  it("finds nothing without a linux image", () => {
    expect(selectPlatformManifest([attestation, windows], "amd64")).toBeUndefined();
  });
});

describe("ociArchitecture", () => {
  it("maps Node's names to OCI's", () => {
    expect(["x64", "arm64", "s390x", "ppc64"].map(ociArchitecture)).toEqual(["amd64", "arm64", "s390x", "ppc64le"]);
  });
});

describe("pullSecretCredentials", () => {
  const secret = (key: string, value: unknown): V1Secret => ({ data: { [key]: Buffer.from(JSON.stringify(value)).toString("base64") } });
  const auth = (user: string, password: string) => ({ auth: Buffer.from(`${user}:${password}`).toString("base64") });

  it("reads dockerconfigjson and legacy dockercfg Secrets, the first with an entry for the registry winning", () => {
    const secrets = [
      secret(".dockerconfigjson", { auths: { "other.example": auth("o", "p") } }),
      secret(".dockercfg", { "registry.example": auth("u", "pw") }),
      secret(".dockerconfigjson", { auths: { "registry.example": auth("late", "x") } }),
    ];
    expect(pullSecretCredentials(secrets, "registry.example")).toEqual({ username: "u", password: "pw" });
  });

  it("matches docker.io under its other names and skips Secrets that are not docker configs", () => {
    const secrets = [
      { data: { ".dockerconfigjson": Buffer.from("not json").toString("base64") } },
      secret(".dockerconfigjson", { auths: { "https://index.docker.io/v1/": { username: "d", password: "h" } } }),
    ];
    expect(pullSecretCredentials(secrets, "docker.io")).toEqual({ username: "d", password: "h" });
    expect(pullSecretCredentials(secrets, "registry.example")).toBeUndefined();
  });
});

describe("replacing", () => {
  it("nulls the keys the new value drops, so a merge patch replaces the map", () => {
    expect(replacing({ cpu: "4", memory: "16Gi" }, { cpu: "8" })).toEqual({ memory: null, cpu: "8" });
    expect(replacing({ cpu: "4" }, undefined)).toBeNull();
    expect(replacing(undefined, { cpu: "4" })).toEqual({ cpu: "4" });
  });
});
