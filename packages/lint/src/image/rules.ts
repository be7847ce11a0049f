// The image checks' metadata (IDs, usual severities, one-line requirements), apart from their code
// so the module command, the docs test and SARIF can list them without loading the image reader.
import type { Severity } from "../findings.js";
import { checkIds, type CheckId } from "../checks/ids.js";

export interface RuleInfo {
  readonly id: CheckId;
  readonly severity: Severity;
  readonly description: string;
}

export const imageRules: readonly RuleInfo[] = [
  {
    id: checkIds.imageModulePresent,
    severity: "error",
    description: "/captf/module holds a .tf, .tf.json, .tofu or .tofu.json file at its top",
  },
  {
    id: checkIds.imageRuntimePresent,
    severity: "error",
    description: "/captf/runtime is a regular file (or an in-image link to one) the image user can execute",
  },
  {
    id: checkIds.imageRuntimeVersion,
    severity: "warning",
    description: "the runtime's name (tofu or terraform) agrees with the io.captf.runtime label",
  },
  { id: checkIds.imageProvidersAbsent, severity: "info", description: "the image ships a provider mirror under /captf/providers" },
  { id: checkIds.imageProvidersLayout, severity: "error", description: "every mirror entry is in the packed or the unpacked layout" },
  {
    id: checkIds.imageProvidersComplete,
    severity: "error",
    description: "the mirror has a package for the platform of every provider the module requires, and no broken link",
  },
  {
    id: checkIds.imageReservedPaths,
    severity: "error",
    description: "nothing under /captf/work, /captf/bin, /captf/config or /var/run/captf/credentials",
  },
  { id: checkIds.imageLabelRole, severity: "error", description: "io.captf.role names the role the image is linted for (unset: info)" },
  {
    id: checkIds.imageLabelContract,
    severity: "warning",
    description: "io.captf.contract names the contract the image is linted against (unset: info)",
  },
  { id: checkIds.imageLabelCapacity, severity: "error", description: "machine capacity labels parse and agree across platforms" },
  { id: checkIds.imageUserRoot, severity: "warning", description: "the image does not run as root" },
  { id: checkIds.imageUserUnresolved, severity: "warning", description: "the image user is numeric, so permissions can be checked" },
  { id: checkIds.imageModuleReadable, severity: "warning", description: "the image user can read the module and the mirror" },
  { id: checkIds.imageModuleLink, severity: "error", description: "links under /captf/module end at files inside it" },
  { id: checkIds.imageEntrypoint, severity: "info", description: "ENTRYPOINT and CMD are unset (the runner replaces them)" },
  { id: checkIds.imagePlatform, severity: "error", description: "the image has the requested platform" },
  {
    id: checkIds.imageSignature,
    severity: "error",
    description: "with --key: a cosign signature by one of the keys verifies the image's digest, as the manager's module policies require",
  },
];
