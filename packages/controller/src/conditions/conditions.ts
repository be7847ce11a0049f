// Status conditions as the manager computes and writes them: below every folder that sets one.

/** A condition as a pass computes it, before its transition time is known. */
export interface ConditionValue {
  status: "True" | "False" | "Unknown";
  reason: string;
  message?: string;
}

/** A status condition as the API stores it. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** The conditions a pass computed, by type; the last value set for a type wins. */
export class ConditionSet {
  readonly #values = new Map<string, ConditionValue>();

  set(type: string, value: ConditionValue): void {
    this.#values.set(type, value);
  }

  get(type: string): ConditionValue | undefined {
    return this.#values.get(type);
  }

  /**
   * The conditions to write: each keeps its previous lastTransitionTime unless its status
   * changed (Kubernetes semantics); conditions this pass did not compute are kept as they were.
   */
  toStatus(previous: readonly Condition[] | undefined, now: number, generation?: number): Condition[] {
    const at = new Date(now).toISOString().replace(/\.\d+Z$/, "Z");
    const byType = new Map((previous ?? []).map((condition) => [condition.type, condition]));
    for (const [type, value] of this.#values) {
      const before = byType.get(type);
      byType.set(type, {
        type,
        status: value.status,
        reason: value.reason,
        message: (value.message ?? "").slice(0, 32768),
        lastTransitionTime: before && before.status === value.status ? before.lastTransitionTime : at,
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
      });
    }
    return [...byType.values()];
  }
}

/** The reason a condition had before this pass, for events on transitions. */
export function previousReason(previous: readonly Condition[] | undefined, type: string): string | undefined {
  return previous?.find((condition) => condition.type === type)?.reason;
}
