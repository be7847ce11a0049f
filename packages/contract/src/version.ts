/** The module contract version this package implements. */
export const contractVersion = "v1alpha1";
export type ContractVersion = typeof contractVersion;

/** The three module roles, in the order the documentation lists them. */
export const roles = ["cluster", "machine", "machinepool"] as const;
export type Role = (typeof roles)[number];

/** The Terraform* kind that runs each role's module. */
export const kindOfRole = {
  cluster: "TerraformCluster",
  machine: "TerraformMachine",
  machinepool: "TerraformMachinePool",
} as const satisfies Record<Role, string>;
export type RoleKind = (typeof kindOfRole)[Role];

/** The prefix reserved for inputs the controller injects. */
export const reservedInputPrefix = "captf_";

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (roles as readonly string[]).includes(value);
}

/** Throws a usage error naming the accepted roles when `value` is not one. */
export function assertRole(value: unknown): asserts value is Role {
  if (!isRole(value)) {
    throw new TypeError(`unknown role ${JSON.stringify(value)}: expected one of ${roles.join(", ")}`);
  }
}
