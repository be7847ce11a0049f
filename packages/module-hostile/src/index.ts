// Where the hostile module's pieces live, for its tests and image builds.
import { fileURLToPath } from "node:url";

/** The hostile machine module's directory (`<package>/machine/`): its `.tf` files and attack.cjs. */
export const hostileModuleDirectory = fileURLToPath(new URL("../machine/", import.meta.url));

/** The image's /captf/runtime: a node script that runs the attacks, then /captf/runtime.real. */
export const hostileRuntimeWrapper = fileURLToPath(new URL("../runtime/runtime.cjs", import.meta.url));

/** One attempt as attack.cjs reports it. */
export interface Attempt {
  phase: string;
  attempt: string;
  via: "filesystem" | "environment" | "direct" | "broker";
  target: string;
  outcome: "refused" | "succeeded" | "error";
  detail: string;
  /** This object's own state through the broker: must succeed. */
  control?: true;
  /** Result forgery: decided by what the manager recorded, not by the attack. */
  observed?: true;
}

/** What attack.cjs POSTs to `report_url` after each phase. */
export interface PhaseReport {
  phase: string;
  object: string | null;
  pod: string | null;
  pid: number;
  seconds: number;
  attempts: Attempt[];
}
