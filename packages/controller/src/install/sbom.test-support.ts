// Validation of a CycloneDX 1.5 JSON document against the specification's JSON schema, by the same
// library scripts/sbom.mjs builds documents with (its validator needs ajv, ajv-formats, ajv-formats-draft2019).
import { Spec, Validation } from "@cyclonedx/cyclonedx-library";

/** The schema violations of `text` (CycloneDX 1.5 JSON), or null when it is valid. */
export async function cycloneDxViolations(text: string): Promise<unknown> {
  return new Validation.JsonStrictValidator(Spec.Version.v1dot5).validate(text);
}
