import type { ConditionType } from "@captf/contract/api";
import type { ConditionValue } from "../conditions/conditions.js";

/** A condition as a function decided it, for the caller to put in its one status patch. */
export interface ConditionReport extends ConditionValue {
  type: ConditionType;
  message: string;
}

export function conditionReport(type: ConditionType, status: ConditionValue["status"], reason: string, message: string): ConditionReport {
  return { type, status, reason, message };
}
