/** A small leveled logger writing one JSON object per line to stderr. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(level: LogLevel): Logger {
  const write = (at: Exclude<LogLevel, "silent">) => (msg: string, fields?: Record<string, unknown>) => {
    if (rank[at] < rank[level]) return;
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: at, pid: process.pid, msg, ...fields })}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}
