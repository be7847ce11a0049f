// `tfcapi-lint image <ref>`: lint a module image from a registry, an OCI layout or an OCI archive.
import { readFileSync } from "node:fs";
import type { Role } from "@captf/contract/roles";
import { readPublicKey, type TrustedKey } from "@captf/contract/signatures";
import { ImageReferenceError } from "@captf/contract/oci";
import { lintImage } from "../image/lint-image.js";
import { emitReport, type OutputFormat } from "./emit.js";
import { exitCodes, UsageError, type CliIo } from "./io.js";

export interface ImageCommandOptions {
  readonly ref: string;
  readonly role: Role;
  readonly contract: string;
  readonly strict: boolean;
  readonly allowWarning: readonly string[];
  readonly format: OutputFormat;
  readonly platform: string | undefined;
  readonly allPlatforms: boolean;
  readonly insecure: boolean;
  /** PEM files of the public keys `--key` names. */
  readonly keyFiles: readonly string[];
}

/** The public keys of `--key`, each file a PEM ECDSA P-256 or Ed25519 key; anything else is a usage error. */
export function readKeyFiles(files: readonly string[]): TrustedKey[] {
  return files.map((file) => {
    let pem: string;
    try {
      pem = readFileSync(file, "utf8");
    } catch (error) {
      throw new UsageError(`--key ${file}: ${(error as Error).message}`);
    }
    const reading = readPublicKey(pem, file);
    if (!reading.key) throw new UsageError(`--key ${file}: ${reading.problem}`);
    return reading.key;
  });
}

export async function runImageCommand(io: CliIo, o: ImageCommandOptions): Promise<number> {
  const keys = readKeyFiles(o.keyFiles);
  let result;
  try {
    result = await lintImage({
      ref: o.ref,
      role: o.role,
      contract: o.contract,
      platform: o.platform,
      allPlatforms: o.allPlatforms,
      insecure: o.insecure,
      env: io.env ?? process.env,
      keys,
    });
  } catch (error) {
    if (error instanceof ImageReferenceError) throw new UsageError(error.message);
    io.stderr.write(`tfcapi-lint image: cannot read ${o.ref}: ${(error as Error).message}\n`);
    return exitCodes.unreadable;
  }
  return emitReport(
    io,
    { target: { image: result.target }, contract: o.contract, role: o.role, fileSet: result.fileSet },
    result.findings,
    { format: o.format, strict: o.strict, allowWarning: o.allowWarning },
  );
}
