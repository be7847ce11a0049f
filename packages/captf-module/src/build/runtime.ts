// The runtime an image ships at /captf/runtime: which program it is (OpenTofu or Terraform), its
// release, and the platform the binary is built for, read from the binary itself.
import { execFileSync } from "node:child_process";
import { closeSync, openSync, readSync } from "node:fs";
import { hostArchitecture, imageArchitectures, type ImageArchitecture } from "@captf/contract/oci";

export const runtimeNames = ["tofu", "terraform"] as const;
export type RuntimeName = (typeof runtimeNames)[number];

/** The Go module each runtime is built from, for the SBOM's purl. */
export const runtimeModules: Record<RuntimeName, string> = {
  tofu: "github.com/opentofu/opentofu",
  terraform: "github.com/hashicorp/terraform",
};

export { hostArchitecture, imageArchitectures, type ImageArchitecture };

/** ELF e_machine values of the architectures images are built for. */
const elfMachines: Record<number, ImageArchitecture> = { 0x3e: "amd64", 0xb7: "arm64" };

/**
 * The architecture of a Linux ELF executable from its first 20 bytes: `undefined` when they are not
 * a 64-bit little-endian ELF header of amd64 or arm64.
 */
export function elfArchitecture(header: Uint8Array): ImageArchitecture | undefined {
  if (header.length < 20 || header[0] !== 0x7f || header[1] !== 0x45 || header[2] !== 0x4c || header[3] !== 0x46) return undefined;
  // EI_CLASS 2 (64-bit), EI_DATA 1 (little-endian); e_machine at offset 18.
  if (header[4] !== 2 || header[5] !== 1) return undefined;
  return elfMachines[header[18]! | (header[19]! << 8)];
}

/** The architecture of the binary at `path`, read from its ELF header. */
export function binaryArchitecture(path: string): ImageArchitecture | undefined {
  const header = Buffer.alloc(20);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  return elfArchitecture(header);
}

/** The program and release a runtime's `version` prints first: `OpenTofu v1.12.6`, `Terraform v1.5.7`. */
export function parseRuntimeVersion(text: string): { name: RuntimeName; version: string } | undefined {
  const match = /^(OpenTofu|Terraform) v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\s*$/m.exec(text);
  if (!match) return undefined;
  return { name: match[1] === "OpenTofu" ? "tofu" : "terraform", version: match[2]! };
}

/** Runs `binary version` (it must be this machine's architecture) and reads which runtime it is. */
export function probeRuntime(binary: string): { name: RuntimeName; version: string } {
  let output: string;
  try {
    output = execFileSync(binary, ["version"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "", CHECKPOINT_DISABLE: "1" },
      timeout: 30_000,
    });
  } catch (error) {
    throw new Error(`${binary} version failed: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`);
  }
  const runtime = parseRuntimeVersion(output);
  if (!runtime)
    throw new Error(`${binary} is neither OpenTofu nor Terraform: its version printed ${JSON.stringify(output.split("\n", 1)[0])}`);
  return runtime;
}
