/**
 * Starting the real server (`node dist/src/cli.js serve`) as a child process,
 * for tests that need whole processes: embedded database, restarts, several
 * processes on one database, shutdown.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../src/net.js";

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const cliPath = path.join(projectRoot, "dist/src/cli.js");


export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  output(): string;
  /** Sends SIGTERM (unless a signal was sent already: a second one forces exit) and resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function startServerProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "info", PLACEMENT_WORKERS: "1", ...env, PORT: String(port) };
  if (!("DATABASE_URL" in env)) delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, [cliPath, "serve"], { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}): ${output}`);
    try {
      const res = await fetch(`${baseUrl}/`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not answer within ${timeoutMs} ms: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    baseUrl,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && !child.killed) child.kill("SIGTERM");
      return exited;
    },
  };
}
