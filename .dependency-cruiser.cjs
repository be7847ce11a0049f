// The layering check (issue 30): `pnpm layers` and a step of the test command. Two rules: no import
// cycle in any package, and inside packages/controller/src a folder imports only from its own layer
// and lower ones. The layers are docs/testing.md's table "Inside the controller"; this list and that
// table say the same (layering-check.test.ts compares them), and a change to one is a change to both.
/** packages/controller/src folders, lowest first; "." is the top-level files. */
const controllerLayers = [
  ["api", "conditions"],
  ["runtime", "metrics", "events", "monitoring", "tracing"],
  ["jobs", "notifications"],
  ["state"],
  ["webhooks"],
  ["identity"],
  ["kinds"],
  ["templates", "signatures"],
  ["reconcile"],
  ["install", "."],
];

/**
 * Imports that run up a layer on purpose: ports the pass defines (reconcile/types.ts,
 * reconcile/pass-reads.ts) and a lower folder implements. docs/testing.md names the same.
 */
const allowedUpward = [
  { from: "kinds/adapters\\.ts$", to: "reconcile/(types|pass-reads)\\.ts$" },
  { from: "identity/job-credentials\\.ts$", to: "reconcile/types\\.ts$" },
];

const source = "^packages/controller/src/";
const folderPattern = (folder) => (folder === "." ? `${source}[^/]+$` : `${source}${folder}/`);

/** One rule per layer: nothing in it imports a folder of a higher layer, but for the allowed ports. */
const layerRules = controllerLayers.slice(0, -1).map((folders, index) => {
  const higher = controllerLayers.slice(index + 1).flat();
  const exceptions = allowedUpward.filter((port) => folders.some((folder) => port.from.startsWith(`${folder}/`)));
  return {
    name: `controller-layer-${index + 1}`,
    comment:
      `${folders.join(", ")} (layer ${index + 1}) imports nothing from ${higher.join(", ")}: ` +
      "move the shared fact down (docs/testing.md, Inside the controller)",
    severity: "error",
    from: {
      path: folders.map(folderPattern),
      ...(exceptions.length > 0 ? { pathNot: exceptions.map((port) => `${source}${port.from}`) } : {}),
    },
    to: { path: higher.map(folderPattern) },
  };
});

/** The ports' own rule: the allowed upward files reach only the port they implement. */
const portRules = allowedUpward.map((port, index) => ({
  name: `controller-port-${index + 1}`,
  comment: `${port.from} may import from a higher layer only ${port.to}`,
  severity: "error",
  from: { path: `${source}${port.from}` },
  to: {
    path: controllerLayers
      .slice(controllerLayers.findIndex((folders) => folders.some((folder) => port.from.startsWith(`${folder}/`))) + 1)
      .flat()
      .map(folderPattern),
    pathNot: `${source}${port.to}`,
  },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle: the files of it cannot be read, tested or moved apart; put what they share in a file below them",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    ...portRules,
  ],
  options: {
    // Source files only: tests and their support may import across (a suite drives the whole pass).
    includeOnly: "^(packages/[^/]+/src|e2e/src)/",
    exclude: { path: ["\\.test\\.ts$", "\\.test-support\\.ts$", "/testdata/", "\\.generated\\.ts$"] },
    doNotFollow: { path: "node_modules" },
    // Type-only imports count: a cycle of types is still a cycle for a reader.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["@captf/source", "import", "types", "default"],
      extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
