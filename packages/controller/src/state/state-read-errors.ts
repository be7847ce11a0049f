/**
 * `captf_state_read_errors_total{kind,reason}`: one count per transition into an unreadable state (the
 * StateReadable reason changes to one of these), not one per pass that finds it still unreadable.
 */

export type StateReadErrorReason = "inconsistent" | "encrypted" | "corrupt" | "lost" | "locked";

/** The metric reason of each StateReadable=False reason that is a failure to read the state. */
const metricReasons: Record<string, StateReadErrorReason> = {
  StateInconsistent: "inconsistent",
  // Another state written over this object's: the Secrets no longer hold the state it applied.
  StateLineageChanged: "inconsistent",
  StateEncrypted: "encrypted",
  // Encrypted state asked for, with no usable key to read it: the reference's encrypted, as for a state without one.
  StateEncryptionKeyUnavailable: "encrypted",
  StateCorrupt: "corrupt",
  // Beyond what captf reads (too many Secrets, too large uncompressed): the contract calls it corrupt.
  StateTooLarge: "corrupt",
  StateLost: "lost",
  StateLocked: "locked",
};

/** The error to count on this pass: its StateReadable reason is a read failure the previous pass did not report. Pure. */
export function newStateReadError(previousReason: string | undefined, reason: string | undefined): StateReadErrorReason | undefined {
  const metricReason = reason === undefined ? undefined : metricReasons[reason];
  return metricReason && reason !== previousReason ? metricReason : undefined;
}
