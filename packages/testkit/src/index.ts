// The public surface of @captf/testkit: the plane (./plane) and jest's describeWithTools.
export * from "./plane.js";
export { describeWithTools, skippedSuitesFile } from "./integration.js";
