// Every rule this tool can report, module and image, with its usual severity and one-line requirement.
import { imageRules, type RuleInfo } from "../image/rules.js";
import { checkIds } from "./ids.js";
import { moduleChecks } from "./registry.js";

const toolRules: readonly RuleInfo[] = [
  { id: checkIds.moduleParse, severity: "error", description: "every module file parses" },
  {
    id: checkIds.suppressionInvalid,
    severity: "warning",
    description: "a tfcapi-lint:ignore comment names a known check and gives a reason",
  },
  { id: checkIds.suppressionUnused, severity: "warning", description: "a tfcapi-lint:ignore comment suppresses a finding" },
];

export const ruleCatalog: readonly RuleInfo[] = [
  ...moduleChecks.map(({ id, severity, description }) => ({ id, severity, description })),
  ...toolRules,
  ...imageRules,
];
