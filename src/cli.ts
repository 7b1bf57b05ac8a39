#!/usr/bin/env node
/** The `placement` command; its commands live in src/cli/commands/ (see `placement --help`). */
import { KEEP_RUNNING } from "./cli/context.js";
import { ExitCode } from "./cli/exit-codes.js";
import { describeFailure, runCli } from "./cli/program.js";

runCli(process.argv.slice(2)).then(
  (code) => {
    // Exit once stdout is written out: a pipe takes writes asynchronously, and exit() would cut a long answer (the OpenAPI document).
    if (code !== KEEP_RUNNING) process.stdout.write("", () => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(describeFailure(err));
    process.exit(ExitCode.ERROR);
  },
);
