/** `placement serve`: migrate, then serve HTTP until SIGTERM/SIGINT. */
import type { Command } from "commander";
import { runServer } from "../../server.js";
import { KEEP_RUNNING, type Cli } from "../context.js";
import { SETTINGS_HELP } from "../settings-help.js";

export function register(program: Command, cli: Cli): void {
  program
    .command("serve")
    .description("Start the HTTP server (migrates the database first).")
    .addHelpText("after", SETTINGS_HELP)
    .action(
      cli.action(async () => {
        await runServer(cli.settings(), cli.log());
        return KEEP_RUNNING;
      }),
    );
}
