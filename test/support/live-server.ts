/**
 * The real HTTP server (serveHttp: node sockets, streaming, the request
 * observer) in this process on a free port, with its log lines captured.
 */
import { testConfig, type Config } from "../../src/config.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../../src/net.js";
import { serveHttp } from "../../src/server.js";

export interface LiveServer {
  baseUrl: string;
  /** Every log line written so far, parsed (JSON format) or raw (text format). */
  lines: string[];
  stop(): Promise<void>;
}

export async function startLiveServer(databaseUrl: string, overrides: Partial<Config> = {}): Promise<LiveServer> {
  const config = testConfig({ DATABASE_URL: databaseUrl, PORT: await freePort(), HOST: "127.0.0.1", LOG_LEVEL: "info", ...overrides });
  const lines: string[] = [];
  const log = createLogger(config.LOG_LEVEL, config.LOG_FORMAT, (line) => lines.push(line));
  const { stop } = await serveHttp(config, databaseUrl, log);
  return { baseUrl: `http://127.0.0.1:${config.PORT}`, lines, stop };
}

/** Waits until `find` matches a line (the request log line is written once the response has left). */
export async function waitForLine(lines: string[], find: (line: string) => boolean, timeoutMs = 5_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = lines.find(find);
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no log line matched; lines:\n${lines.join("\n")}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
