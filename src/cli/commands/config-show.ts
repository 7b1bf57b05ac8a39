/** `placement config show`: every effective setting (secrets masked) and where it came from. */
import type { Command } from "commander";
import { describeConfig, showConfig } from "../../config-show.js";
import type { Cli } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { commandGroup } from "../program.js";

export function register(program: Command, cli: Cli): void {
  commandGroup(program, "config")
    .command("show")
    .description("Print the effective settings, secrets masked, each with where it came from (default, environment, or file [section] option).")
    .option("--json", "print JSON: {file, settings: {NAME: {value, source}}, notes}")
    .action(
      cli.action(async (options: { json?: boolean }) => {
        const loaded = cli.loadedSettings();
        cli.print(showConfig(loaded), options.json, describeConfig);
        return ExitCode.OK;
      }),
    );
}
