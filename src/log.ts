/**
 * A small leveled logger writing one line per entry to stderr: a JSON object
 * (the default), or with LOG_FORMAT=text a plain line in oslo.log's order
 * (time, pid, level, message, then key=value fields).
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
export type LogFormat = "json" | "text";

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  /** How lines are written; absent means json. */
  readonly format?: LogFormat;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

function textLine(at: string, msg: string, fields: Record<string, unknown> | undefined): string {
  const rest = Object.entries(fields ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${JSON.stringify(v) ?? String(v)}`);
  return [new Date().toISOString(), process.pid, at.toUpperCase(), msg, ...rest].join(" ");
}

/** `sink` receives each line without its newline (tests read the lines; the default writes stderr). */
export function createLogger(level: LogLevel, format: LogFormat = "json", sink?: (line: string) => void): Logger {
  const out = sink ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const write = (at: Exclude<LogLevel, "silent">) => (msg: string, fields?: Record<string, unknown>) => {
    if (rank[at] < rank[level]) return;
    out(
      format === "text"
        ? textLine(at, msg, fields)
        : JSON.stringify({ time: new Date().toISOString(), level: at, pid: process.pid, msg, ...fields }),
    );
  };
  return { format, debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}
