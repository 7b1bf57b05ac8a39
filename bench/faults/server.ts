/** The real server (`dist/src/cli.js serve`) as a child process on loopback, for the soak. */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../src/net.js";

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src/cli.js");

export interface SoakServer {
  child: ChildProcess;
  baseUrl: string;
  output(): string;
  /** The primary's current workers. */
  workers(): number[];
  stop(): Promise<number | null>;
}

export async function startSoakServer(env: Record<string, string>): Promise<SoakServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [cli, "serve"], {
    env: { ...process.env, ...env, HOST: "127.0.0.1", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (!(await fetch(`${baseUrl}/`).then((r) => r.ok, () => false))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not start: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    baseUrl,
    output: () => output,
    workers: () => {
      try {
        return readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        return [];
      }
    },
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}
