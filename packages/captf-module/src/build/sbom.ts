// CycloneDX 1.5 SBOMs of captf images, built and serialized by the CycloneDX library: the module
// images' (the runtime, each provider package, each module file) and, through
// packages/controller/scripts/sbom.mjs, the manager image's. No timestamp but the one given and no
// random serial number, so the same inputs give the same document.
import { createRequire } from "node:module";
import { Enums, Models, Serialize, Spec } from "@cyclonedx/cyclonedx-library";

const libraryVersion = (createRequire(import.meta.url)("@cyclonedx/cyclonedx-library/package.json") as { version: string }).version;

/** One component, described: `license` is an SPDX id, `hashes` maps an algorithm (`SHA-256`) to hex. */
export interface ComponentDescription {
  type: `${Enums.ComponentType}`;
  name: string;
  bomRef?: string;
  version?: string;
  purl?: string;
  license?: string;
  hashes?: Record<string, string>;
  properties?: Record<string, string>;
}

/** An SBOM: `subject` is the image, `components` what it holds, `created` an ISO time, `tool` what made the list. */
export interface SbomDocument {
  subject: ComponentDescription;
  tool?: string;
  created: string;
  components: readonly ComponentDescription[];
}

function componentModel({
  type,
  name,
  bomRef,
  version,
  purl,
  license,
  hashes = {},
  properties = {},
}: ComponentDescription): Models.Component {
  // A component without a bom-ref would get a random one from the serializer: name it after itself.
  const component = new Models.Component(type as Enums.ComponentType, name, {
    bomRef: bomRef ?? (version ? `${name}@${version}` : name),
    version,
    purl: purl as never,
  });
  if (license) component.licenses.add(new Models.SpdxLicense(license));
  for (const [algorithm, content] of Object.entries(hashes)) component.hashes.set(algorithm as Enums.HashAlgorithm, content);
  for (const [property, value] of Object.entries(properties)) component.properties.add(new Models.Property(property, value));
  return component;
}

/** The document as the library models it. */
export function cycloneDxBom({ subject, created, components, tool = "captf-module build" }: SbomDocument): Models.Bom {
  const tools = new Models.Tools();
  tools.components.add(new Models.Component(Enums.ComponentType.Application, tool));
  tools.components.add(new Models.Component(Enums.ComponentType.Library, "@cyclonedx/cyclonedx-library", { version: libraryVersion }));
  // No serial number: a random one would give each build its own document.
  const bom = new Models.Bom({
    metadata: new Models.Metadata({ timestamp: new Date(created), tools, component: componentModel(subject) }),
  });
  for (const component of components) bom.components.add(componentModel(component));
  return bom;
}

/** The CycloneDX 1.5 JSON text of the document, components in the order given (callers give a stable one). */
export function cycloneDxJson(document: SbomDocument): string {
  const serializer = new Serialize.JsonSerializer(new Serialize.JSON.Normalize.Factory(Spec.Spec1dot5));
  return `${serializer.serialize(cycloneDxBom(document), { sortLists: false, space: 2 })}\n`;
}
