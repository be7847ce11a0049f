// `image --key`: the signature check the manager's TerraformModulePolicies make before a Job runs an image, so a module
// author sees in CI what the manager would refuse. The finding names the ImageVerified reason the manager would report.
import { RegistrySource, type Fetched, type ImageSource } from "@captf/contract/oci";
import { verifyImageSignature, type TrustedKey, type VerificationOutcome } from "@captf/contract/signatures";
import { checkIds } from "../checks/ids.js";
import { moduleWide, type Finding } from "../findings.js";

/** The finding of a verification outcome; none when it verified. Pure. */
export function signatureFinding(outcome: VerificationOutcome): Finding | undefined {
  const finding = (message: string, fix: string) => moduleWide(checkIds.imageSignature, "error", message, fix);
  const digest = outcome.digest ?? "the image";
  switch (outcome.kind) {
    case "verified":
      return undefined;
    case "missing":
      return finding(
        `SignatureMissing: ${digest} has no cosign signature`,
        "sign the pushed digest: cosign sign --key <key> <image>@<digest>",
      );
    case "invalid":
      return finding(`SignatureInvalid: ${outcome.problems.slice(0, 3).join("; ")}`, "sign the image again and push the new signature");
    case "unknown-key":
      return finding(
        `KeyUnknown: ${outcome.signatures} signature(s) of ${digest}, none verifies with the given key(s)`,
        "sign with the key the policy trusts, or pass its public key with --key",
      );
    case "unreachable":
      return finding(
        `RegistryUnreachable: the signatures could not be read: ${outcome.problem}`,
        "check the registry and the credentials in the docker or podman auth files",
      );
  }
}

/** Checks the image `root` of `source` against `keys`: signatures live in a registry, not in an OCI layout or archive. */
export async function checkSignature(source: ImageSource, root: Fetched, keys: readonly TrustedKey[]): Promise<Finding | undefined> {
  if (!(source instanceof RegistrySource))
    return moduleWide(
      checkIds.imageSignature,
      "error",
      "signatures are read from a registry: an OCI layout or archive carries none",
      "push the image and its signature, and lint the registry reference",
    );
  return signatureFinding(await verifyImageSignature(source, () => Promise.resolve(root), keys));
}
