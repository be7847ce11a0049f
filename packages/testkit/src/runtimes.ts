import { execFileSync } from "node:child_process";
import { hostArchitecture, imageArchitectures } from "@captf/contract/oci";
import { findTool, requireTool, type ToolName } from "./tools.js";

/**
 * The runtimes a module image ships at /captf/runtime, as tools/install.sh builds them: the
 * io.captf.runtime label value is the tool's name; image tags end in `-<imageTagSuffix>`.
 */
export const moduleRuntimes = {
  tofu: { imageTagSuffix: "opentofu", displayName: "OpenTofu" },
  terraform: { imageTagSuffix: "terraform", displayName: "Terraform" },
} as const;
export type RuntimeName = keyof typeof moduleRuntimes;
export const runtimeNames = Object.keys(moduleRuntimes) as RuntimeName[];

const versions = new Map<string, string>();

/** The release the runtime binary reports (`version -json`), e.g. 1.12.6 or 1.5.7. */
export function runtimeVersion(runtime: RuntimeName): string {
  const binary = requireTool(runtime);
  let version = versions.get(binary);
  if (version === undefined) {
    const report = JSON.parse(
      execFileSync(binary, ["version", "-json"], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", CHECKPOINT_DISABLE: "1" } }),
    ) as { terraform_version: string };
    version = report.terraform_version;
    versions.set(binary, version);
  }
  return version;
}

export { hostArchitecture, imageArchitectures };

/** The runtime's binary per architecture: this machine's, and the other one's when tools/install.sh cross-compiled it. */
export function runtimeBinaries(runtime: RuntimeName): Record<string, string> {
  const binaries: Record<string, string> = { [hostArchitecture]: requireTool(runtime) };
  for (const arch of imageArchitectures) {
    const binary = arch === hostArchitecture ? undefined : findTool(`${runtime}-${arch}` as ToolName);
    if (binary) binaries[arch] = binary;
  }
  return binaries;
}
