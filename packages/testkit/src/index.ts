// The public surface of @captf/testkit.
export { toolVariables, skipMissingToolsVariable, MissingToolError, toolsDirectory, findTool, requireTool } from "./tools.js";
export type { ToolName } from "./tools.js";
export { describeWithTools, skippedSuitesFile } from "./integration.js";
