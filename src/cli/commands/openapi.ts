/** `placement openapi`: print the OpenAPI 3.1 document GET /openapi.json serves (no database needed). */
import type { Command } from "commander";
import { buildOpenApiDocument } from "../../openapi/document.js";
import type { Cli } from "../context.js";
import { ExitCode } from "../exit-codes.js";

export function register(program: Command, cli: Cli): void {
  program
    .command("openapi")
    .description("Print the OpenAPI 3.1 document of the API (the one GET /openapi.json serves) as JSON.")
    .action(
      cli.action(async () => {
        // Always JSON: the document is JSON, and `--json` would add nothing.
        cli.print(buildOpenApiDocument(), true, () => "");
        return ExitCode.OK;
      }),
    );
}
