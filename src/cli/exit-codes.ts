/**
 * Exit codes of `placement`. Scripts and orchestration test these numbers:
 * keep them stable. Commands with findings (status, audit) add their own,
 * following the upstream tools they stand in for.
 */
export const ExitCode = {
  OK: 0,
  /** The command failed: the database is unreachable, a setting is invalid, ... (the cause is on stderr). */
  ERROR: 1,
  /** The command line is wrong: an unknown command or option, a missing argument. */
  USAGE: 2,
} as const;
