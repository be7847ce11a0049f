import { describe, expect, it } from "@jest/globals";
import { CommandError } from "../io.js";
import { dockerConfigFile, findRegistryCredentials } from "./credentials.js";

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** A file system of one Docker config, at the path the environment names. */
function files(entries: Record<string, unknown>): (path: string) => string | undefined {
  return (path) => (path in entries ? JSON.stringify(entries[path]) : undefined);
}

describe("dockerConfigFile", () => {
  it("is $DOCKER_CONFIG/config.json, else ~/.docker/config.json", () => {
    expect(dockerConfigFile({ DOCKER_CONFIG: "/etc/docker-cfg", HOME: "/home/a" })).toBe("/etc/docker-cfg/config.json");
    expect(dockerConfigFile({ HOME: "/home/a" })).toBe("/home/a/.docker/config.json");
    expect(dockerConfigFile({ DOCKER_CONFIG: "", HOME: "/home/a" })).toBe("/home/a/.docker/config.json");
  });
});

describe("findRegistryCredentials", () => {
  const home = { HOME: "/home/a" };
  const config = "/home/a/.docker/config.json";

  it("decodes the base64 auth of the registry's auths entry", () => {
    const read = files({ [config]: { auths: { "registry.example.com": { auth: b64("alice:pa:ss") } } } });
    expect(findRegistryCredentials("registry.example.com", home, read)).toEqual({
      credentials: { username: "alice", password: "pa:ss" },
      origin: config,
    });
  });

  it("finds the entry under the keys docker writes: with a scheme, with a port, Docker Hub's v1 URL", () => {
    const read = files({
      [config]: {
        auths: {
          "https://registry.example.com": { auth: b64("a:1") },
          "127.0.0.1:5000": { username: "b", password: "2" },
          "https://index.docker.io/v1/": { auth: b64("c:3") },
        },
      },
    });
    expect(findRegistryCredentials("registry.example.com", home, read).credentials).toEqual({ username: "a", password: "1" });
    expect(findRegistryCredentials("127.0.0.1:5000", home, read).credentials).toEqual({ username: "b", password: "2" });
    expect(findRegistryCredentials("docker.io", home, read).credentials).toEqual({ username: "c", password: "3" });
  });

  it("reads $DOCKER_CONFIG's file, not the home directory's", () => {
    const read = files({
      "/cfg/config.json": { auths: { r: { auth: b64("from-env:1") } } },
      [config]: { auths: { r: { auth: b64("from-home:1") } } },
    });
    expect(findRegistryCredentials("r", { ...home, DOCKER_CONFIG: "/cfg" }, read)).toEqual({
      credentials: { username: "from-env", password: "1" },
      origin: "/cfg/config.json",
    });
  });

  it("takes CAPTF_REGISTRY_USERNAME and CAPTF_REGISTRY_PASSWORD over the file", () => {
    const read = files({ [config]: { auths: { r: { auth: b64("file:1") } } } });
    const env = { ...home, CAPTF_REGISTRY_USERNAME: "ci", CAPTF_REGISTRY_PASSWORD: "token" };
    expect(findRegistryCredentials("r", env, read)).toEqual({
      credentials: { username: "ci", password: "token" },
      origin: "CAPTF_REGISTRY_USERNAME/CAPTF_REGISTRY_PASSWORD",
    });
  });

  it("refuses one of the two variables without the other", () => {
    expect(() => findRegistryCredentials("r", { ...home, CAPTF_REGISTRY_USERNAME: "ci" }, files({}))).toThrow(/set both/);
    expect(() => findRegistryCredentials("r", { ...home, CAPTF_REGISTRY_PASSWORD: "x" }, files({}))).toThrow(CommandError);
  });

  it("is anonymous, saying where it looked, without a file, without an entry or with an undecodable one", () => {
    expect(findRegistryCredentials("r", home, files({}))).toEqual({
      credentials: undefined,
      origin: `${config} (absent) or CAPTF_REGISTRY_USERNAME/CAPTF_REGISTRY_PASSWORD`,
    });
    const other = files({ [config]: { auths: { elsewhere: { auth: b64("a:b") }, r: { auth: b64("no-colon") } } } });
    expect(findRegistryCredentials("r", home, other)).toEqual({
      credentials: undefined,
      origin: `${config} (no auths entry for r) or CAPTF_REGISTRY_USERNAME/CAPTF_REGISTRY_PASSWORD`,
    });
  });

  it("names the variables when the file leaves the registry to a credential helper it does not run", () => {
    const helpers = files({ [config]: { auths: {}, credHelpers: { "r.example.com": "ecr-login" } } });
    expect(() => findRegistryCredentials("r.example.com", home, helpers)).toThrow(
      /docker-credential-ecr-login.*set CAPTF_REGISTRY_USERNAME and CAPTF_REGISTRY_PASSWORD/,
    );
    const store = files({ [config]: { credsStore: "desktop" } });
    expect(() => findRegistryCredentials("r", home, store)).toThrow(/docker-credential-desktop/);
  });
});
