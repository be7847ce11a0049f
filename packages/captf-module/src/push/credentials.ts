// Where `push` finds the registry's username and password: the environment, else Docker's config file.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { credentialsFromAuths, dockerConfigAuths, type Credentials } from "@captf/contract/oci";
import { CommandError } from "../io.js";

export const usernameVariable = "CAPTF_REGISTRY_USERNAME";
export const passwordVariable = "CAPTF_REGISTRY_PASSWORD";

export interface FoundCredentials {
  /** Undefined: push anonymously (a registry that asks for credentials then refuses with a message naming `origin`). */
  readonly credentials: Credentials | undefined;
  /** Where they came from, or where none were found, for messages and the report. */
  readonly origin: string;
}

/** `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`. */
export function dockerConfigFile(env: Readonly<Record<string, string | undefined>>): string {
  return join(env.DOCKER_CONFIG || join(env.HOME || homedir(), ".docker"), "config.json");
}

/**
 * The credentials for `registry` (host[:port], docker.io for Docker Hub): `CAPTF_REGISTRY_USERNAME` and
 * `CAPTF_REGISTRY_PASSWORD` when set (both, or it is an error), else the `auths` entry of Docker's config file
 * (`auth` in base64, or `username` and `password`). A registry the file leaves to a credential helper is an error
 * that names the variables: `push` runs no helper.
 */
export function findRegistryCredentials(
  registry: string,
  env: Readonly<Record<string, string | undefined>>,
  read: (path: string) => string | undefined = readIfPresent,
): FoundCredentials {
  const username = env[usernameVariable];
  const password = env[passwordVariable];
  if (username || password) {
    if (!username || !password)
      throw new CommandError(`set both ${usernameVariable} and ${passwordVariable}, or neither`, "credentials-incomplete");
    return { credentials: { username, password }, origin: `${usernameVariable}/${passwordVariable}` };
  }
  const file = dockerConfigFile(env);
  const text = read(file);
  if (text === undefined) return { credentials: undefined, origin: `${file} (absent) or ${usernameVariable}/${passwordVariable}` };
  const auths = dockerConfigAuths(text);
  const found = auths && credentialsFromAuths(auths, registry);
  if (found) return { credentials: found, origin: file };
  const helper = credentialHelper(text, registry);
  if (helper)
    throw new CommandError(
      `${file} leaves ${registry}'s credentials to the helper docker-credential-${helper}, which captf-module does not run: ` +
        `set ${usernameVariable} and ${passwordVariable}, or add an auths entry (docker login writes one when no helper is set)`,
      "credential-helper",
    );
  return { credentials: undefined, origin: `${file} (no auths entry for ${registry}) or ${usernameVariable}/${passwordVariable}` };
}

/** The credential helper a Docker config names for `registry` (`credHelpers`, else `credsStore`), if any. */
function credentialHelper(text: string, registry: string): string | undefined {
  try {
    const config = JSON.parse(text) as { credHelpers?: Record<string, unknown>; credsStore?: unknown };
    const own = config.credHelpers?.[registry];
    if (typeof own === "string" && own !== "") return own;
    return typeof config.credsStore === "string" && config.credsStore !== "" ? config.credsStore : undefined;
  } catch {
    return undefined;
  }
}

function readIfPresent(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}
