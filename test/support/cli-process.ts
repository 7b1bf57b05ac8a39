/** Running `placement <args>` (the built dist/src/cli.js) to completion, as an operator would. */
import { execFile } from "node:child_process";
import { cliPath } from "./server-process.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runPlacement(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cliPath, ...args],
      { env: { ...process.env, LOG_LEVEL: "warn", ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin!.end(input);
    else child.stdin!.end();
  });
}
