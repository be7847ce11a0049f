// scripts/sbom.mjs: the CycloneDX document of the image's npm packages, built by the CycloneDX library.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { cycloneDxViolations } from "./sbom.test-support.js";

const sbomScript = fileURLToPath(new URL("../../scripts/sbom.mjs", import.meta.url));
const controllerManifest = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as {
  devDependencies: Record<string, string>;
};
const created = "2026-01-02T03:04:05.000Z";
const sbomText = () => execFileSync(process.execPath, [sbomScript, "--version", "1.2.3", "--created", created], { encoding: "utf8" });
/** The script's document, made once: each run reads the whole lockfile (seconds on a loaded machine). */
let made: string | undefined;
const madeOnce = () => (made ??= sbomText());
/** A run of the script, then a schema check: more than jest's 5 s default when the machine is busy. */
const processTimeoutMs = 60_000;

describe("scripts/sbom.mjs", () => {
  it(
    "writes a CycloneDX 1.5 document the specification's JSON schema accepts, made by the CycloneDX library",
    async () => {
      const text = madeOnce();
      expect(await cycloneDxViolations(text)).toBeNull();
      const sbom = JSON.parse(text) as {
        specVersion: string;
        serialNumber?: string;
        metadata: { timestamp: string; tools: { components: { name: string; version?: string }[] } };
      };
      expect(sbom.specVersion).toBe("1.5");
      expect(sbom.metadata.timestamp).toBe(created);
      expect(sbom.metadata.tools.components).toContainEqual(
        expect.objectContaining({
          name: "@cyclonedx/cyclonedx-library",
          version: controllerManifest.devDependencies["@cyclonedx/cyclonedx-library"],
        }),
      );
    },
    processTimeoutMs,
  );

  it(
    "gives the same text for the same lockfile and time: no serial number, no random bom-ref",
    () => {
      const first = madeOnce();
      expect(sbomText()).toBe(first);
      expect(first).not.toMatch(/serialNumber|BomRef\./);
    },
    processTimeoutMs,
  );

  it(
    "finds a document the schema rejects",
    async () => {
      const sbom = JSON.parse(madeOnce()) as { components: { hashes?: { content: string }[] }[] };
      sbom.components.find((component) => component.hashes)!.hashes![0]!.content = "not a hex digest";
      expect(await cycloneDxViolations(JSON.stringify(sbom))).not.toBeNull();
    },
    processTimeoutMs,
  );
});
