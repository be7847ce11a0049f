/**
 * Names captf declares but does not produce on a tested path yet, each with why: `scripts/check-names-produced.mjs`
 * fails the test command on a declared name that no tested path produces unless it is listed here, and on a name
 * listed here that is produced now (or no longer declared).
 */
export const reservedNames: Record<string, string> = {};
