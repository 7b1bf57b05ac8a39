/** `placement status`: upgrade readiness as `placement-status upgrade check` reports it. */
import type { Command } from "commander";
import { CHECK_EXIT_CODE, upgradeChecks, type Check } from "../../services/upgrade-checks.js";
import type { Cli } from "../context.js";
import { describeFailure } from "../program.js";

/** Exit code of a check run that failed unexpectedly, as oslo.upgradecheck has it. */
const UNEXPECTED = 255;

/** Upstream's box: one block per check. */
function text(checks: Check[]): string {
  const lines = checks.map((c) => [`Check: ${c.name}`, `Result: ${c.result}`, `Details: ${c.details ?? "None"}`]);
  const width = Math.max("Upgrade Check Results".length, ...lines.flat().map((l) => l.length));
  const rule = `+${"-".repeat(width + 2)}+`;
  const row = (l: string) => `| ${l.padEnd(width)} |`;
  return `${[rule, row("Upgrade Check Results"), rule, ...lines.flatMap((block) => [...block.map(row), rule])].join("\n")}\n`;
}

export function register(program: Command, cli: Cli): void {
  program
    .command("status")
    .description("Check that this database and configuration are ready to serve: database, schema, policy file, data.")
    .option("--json", "print JSON: {checks: [{name, result, details}], code}")
    .addHelpText(
      "after",
      "\nExit codes: 0 every check succeeded, 1 a warning (works, but look), 2 a failure (will not work), 255 the checks could not run.",
    )
    .action(
      cli.action(async (options: { json?: boolean }) => {
        try {
          const checks = await cli.withDatabase((database, url) => upgradeChecks(database, cli.settings(), url));
          const code = Math.max(...checks.map((c) => CHECK_EXIT_CODE[c.result]));
          cli.print({ checks, code }, options.json, () => text(checks));
          return code;
        } catch (err) {
          cli.stderr(describeFailure(err));
          return UNEXPECTED;
        }
      }),
    );
}
