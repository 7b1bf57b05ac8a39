/**
 * `placement db import --from URL`: copies an upstream Placement database
 * (PostgreSQL or MySQL/MariaDB) into this server's empty database, verifies
 * the copy and prints the verification. The work is src/import's.
 */
import type { Command } from "commander";
import { ImportVerificationFailed, importDatabase, TABLE_LABELS, type ImportProgress } from "../../import/import-database.js";
import { formatVerification } from "../../import/verify.js";
import type { Cli } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { commandGroup } from "../program.js";

/** One line rewritten in place on a terminal; elsewhere one line per table written. */
function progressReporter(stream: NodeJS.WriteStream): ImportProgress {
  return (phase, table, done, total) => {
    if (stream.isTTY) stream.write(`\r\x1b[K${phase} ${table}: ${done}/${total}${phase === "verify" && done === total ? "\n" : ""}`);
    else if (phase === "write" && done === total) stream.write(`copied ${total} ${table}\n`);
  };
}

export function register(program: Command, cli: Cli): void {
  commandGroup(program, "db")
    .command("import")
    .description(
      "Copy an upstream Placement database (PostgreSQL or MySQL/MariaDB, read in one snapshot, never written) into this " +
        "server's empty database with every id and generation, verify the copy, and commit it only if nothing differs.",
    )
    .requiredOption("--from <url>", "the upstream database, as in its placement.conf (mysql+pymysql://..., postgresql+psycopg2://...)")
    .option("--json", "print JSON: {sourceRevision, rows, verification}")
    .action(
      cli.action(async (options: { from: string; json?: boolean }) => {
        let result: Awaited<ReturnType<typeof importDatabase>>;
        try {
          result = await cli.withDatabase((_db, url) => importDatabase(options.from, url, progressReporter(process.stderr)));
        } catch (err) {
          // Say what differed before the one-line failure.
          if (err instanceof ImportVerificationFailed) process.stderr.write(formatVerification(err.verification));
          throw err;
        }
        cli.print(result, options.json, (r) => {
          const rows = (Object.keys(TABLE_LABELS) as (keyof typeof TABLE_LABELS)[]).map((t) => `${r.rows[t]} ${TABLE_LABELS[t]}`);
          return `imported from schema revision ${r.sourceRevision}: ${rows.join(", ")}\n${formatVerification(r.verification)}`;
        });
        return ExitCode.OK;
      }),
    );
}
