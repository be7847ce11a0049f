// What every output format prints: the target, the contract and role, the findings and their counts.
import type { Role } from "@captf/contract/roles";
import type { Finding, Summary } from "../findings.js";

export interface ImageTarget {
  readonly ref: string;
  readonly digest: string;
  readonly platforms: readonly string[];
}

export interface Report {
  readonly target: { readonly module: string } | { readonly image: ImageTarget };
  readonly contract: string;
  readonly role: Role;
  /** Which runtime's files the expression checks read; "" when no module was read. */
  readonly fileSet: "terraform" | "opentofu" | "";
  readonly findings: readonly Finding[];
  readonly summary: Summary;
}

/** Bumped only on an incompatible change to the JSON output. */
export const jsonSchemaVersion = 1;
