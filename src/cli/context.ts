/**
 * What a command module is given: settings and a logger made on first use (so
 * `--help` works whatever the environment holds), the configured database,
 * and one way to print results (text, or JSON with `--json`).
 */
import type { Command } from "commander";
import { loadSettings, type Config, type LoadedConfig } from "../config.js";
import { openDatabase, type Database } from "../db/database.js";
import { createLogger, type Logger } from "../log.js";
import { provideDatabase } from "../server.js";

/** What an action resolves to: an exit code, or KEEP_RUNNING for a server. */
export const KEEP_RUNNING = "keep-running";
export type ActionResult = number | typeof KEEP_RUNNING;

export interface Cli {
  settings(): Config;
  /** The settings with where each came from, and the notes about the configuration file. */
  loadedSettings(): LoadedConfig;
  log(): Logger;
  /** Opens the configured database (starting the embedded one when DATABASE_URL is unset), runs `work`, closes it. */
  withDatabase<T>(work: (database: Database, url: string) => Promise<T>): Promise<T>;
  /** Prints `data` as one JSON document when `json` is set, else as `text(data)`. */
  print<T>(data: T, json: boolean | undefined, text: (data: T) => string): void;
  /** Wraps an action so its result becomes the process's exit code. */
  action<A extends unknown[]>(run: (...args: A) => Promise<ActionResult>): (...args: A) => Promise<void>;
  /** Set by the last action that ran; undefined when none did (help, a usage error). */
  result: ActionResult | undefined;
}

/** A file in src/cli/commands/ exports this; the program finds and registers every such file. */
export interface CommandModule {
  register(program: Command, cli: Cli): void;
}

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
}

/** `configFile` gives --config-file once the command line is parsed. */
export function createCli(io: CliIo, configFile: () => string | undefined = () => undefined): Cli {
  let loaded: LoadedConfig | undefined;
  let log: Logger | undefined;
  const cli: Cli = {
    result: undefined,
    loadedSettings: () => (loaded ??= loadSettings(io.env, configFile())),
    settings: () => cli.loadedSettings().config,
    log: () => {
      if (log) return log;
      log = createLogger(cli.settings().LOG_LEVEL);
      // What the configuration file says that has no effect here, or that nobody knows.
      for (const note of cli.loadedSettings().notes) log[note.level](note.message);
      return log;
    },
    async withDatabase(work) {
      const settings = cli.settings();
      const { url, embedded } = await provideDatabase(settings, cli.log());
      const database = openDatabase(url, 2, cli.log());
      try {
        return await work(database, url);
      } finally {
        await database.close();
        await embedded?.stop();
      }
    },
    print(data, json, text) {
      io.stdout(json ? `${JSON.stringify(data, null, 2)}\n` : text(data));
    },
    action: (run) => async (...args) => {
      cli.result = await run(...args);
    },
  };
  return cli;
}
