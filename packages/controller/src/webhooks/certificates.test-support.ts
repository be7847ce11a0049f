// Serving certificates for the admission server's tests: made by the testkit (one home), plus a
// rotation that renames a new pair into place as cert-manager does.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type { ServingCertificate } from "@captf/testkit";

export { generateServingCertificate, type ServingCertificate } from "@captf/testkit";

/** Replaces the pair at `target` by the one at `source` the way a rotation does: each file renamed into place. */
export function rotateInto(source: ServingCertificate, target: { certFile: string; keyFile: string }): void {
  writeFileSync(`${target.keyFile}.new`, readFileSync(source.keyFile));
  writeFileSync(`${target.certFile}.new`, readFileSync(source.certFile));
  renameSync(`${target.keyFile}.new`, target.keyFile);
  renameSync(`${target.certFile}.new`, target.certFile);
}
