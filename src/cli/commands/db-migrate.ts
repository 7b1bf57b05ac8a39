/** `placement db migrate`: bring the schema up to date and exit. */
import type { Command } from "commander";
import { runMigrations } from "../../db/migrate.js";
import type { Cli } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { commandGroup } from "../program.js";

export function register(program: Command, cli: Cli): void {
  commandGroup(program, "db")
    .command("migrate")
    .description("Apply database migrations and exit (safe to run while servers run).")
    .action(
      cli.action(async () => {
        await cli.withDatabase((database) => runMigrations(database.pool));
        cli.log().info("database is up to date");
        return ExitCode.OK;
      }),
    );
}
