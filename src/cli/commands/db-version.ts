/** `placement db version`: the schema version the database is at, and what this release would apply. */
import type { Command } from "commander";
import { schemaVersion, type SchemaVersion } from "../../db/migrate.js";
import type { Cli } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { commandGroup } from "../program.js";

function text(v: SchemaVersion): string {
  const lines = [`current: ${v.current ?? "none (empty database)"}`, `latest:  ${v.latest}`];
  if (v.pending.length > 0) lines.push(`pending: ${v.pending.join(", ")} (run 'placement db migrate')`);
  return `${lines.join("\n")}\n`;
}

export function register(program: Command, cli: Cli): void {
  commandGroup(program, "db")
    .command("version")
    .description("Print the database's schema version and any migrations not yet applied.")
    .option("--json", "print JSON: {current, latest, applied, pending}")
    .action(
      cli.action(async (options: { json?: boolean }) => {
        const version = await cli.withDatabase((database) => schemaVersion(database.pool));
        cli.print(version, options.json, text);
        return ExitCode.OK;
      }),
    );
}
