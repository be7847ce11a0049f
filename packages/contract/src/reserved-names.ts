/**
 * Names captf declares but does not produce on a tested path yet, each with why: `scripts/check-names-produced.mjs`
 * fails the test command on a declared name that no tested path produces unless it is listed here, and on a name
 * listed here that is produced now (or no longer declared). Shrinking this table is issue 13's work.
 */
export const reservedNames: Record<string, string> = {
  "annotation:captf.io/pending-cluster-outputs": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/partial-cluster-outputs": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/approval-hash": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/held-cluster-outputs": "declared only: nothing produces it yet (issue 13)",
};
