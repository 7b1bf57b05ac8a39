/**
 * The `placement` program on commander. Every file in ./commands registers its
 * command(s), so adding a command is adding one file there. Commands below a
 * group (`db migrate`) attach to it with commandGroup().
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Command, CommanderError, Help } from "commander";
import { ConfigError } from "../config.js";
import { rootCause } from "../root-cause.js";
import { createCli, type ActionResult, type CliIo, type CommandModule } from "./context.js";
import { ExitCode } from "./exit-codes.js";
import { SETTINGS_HELP } from "./settings-help.js";

/** The groups commands may attach to, with the description their `--help` shows. */
const GROUPS: Record<string, string> = {
  db: "The database: schema version and migrations.",
  config: "The configuration: what placement.conf and the environment add up to.",
};

export function commandGroup(program: Command, name: keyof typeof GROUPS & string): Command {
  const existing = program.commands.find((c) => c.name() === name);
  if (existing) return existing;
  return program.command(name).description(GROUPS[name] ?? "");
}

/** The top-level help lists every command with its full path (`db migrate`), not just the groups. */
class FlatHelp extends Help {
  override visibleCommands(cmd: Command): Command[] {
    const visible = super.visibleCommands(cmd);
    if (cmd.parent) return visible;
    return visible.flatMap((sub) => (sub.commands.length > 0 ? super.visibleCommands(sub).filter((c) => c.name() !== "help") : [sub]));
  }

  override subcommandTerm(cmd: Command): string {
    const groups: string[] = [];
    for (let c = cmd.parent; c?.parent; c = c.parent) groups.unshift(c.name());
    return [...groups, super.subcommandTerm(cmd)].join(" ");
  }
}

/** Commands that render their help with FlatHelp, as do the commands made from them. */
class PlacementCommand extends Command {
  override createCommand(name?: string): Command {
    return new PlacementCommand(name);
  }

  override createHelp(): Help {
    return Object.assign(new FlatHelp(), this.configureHelp());
  }
}

async function loadCommands(): Promise<CommandModule[]> {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "commands");
  const files = readdirSync(dir)
    .filter((f) => /\.(js|ts)$/.test(f) && !f.endsWith(".d.ts"))
    .sort();
  const modules: CommandModule[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as Partial<CommandModule>;
    if (typeof mod.register !== "function") throw new Error(`src/cli/commands/${file} exports no register(program, cli)`);
    modules.push(mod as CommandModule);
  }
  return modules;
}

export async function buildProgram(io: CliIo, stderr: (text: string) => void) {
  let program: Command | undefined;
  const cli = createCli(io, () => program?.opts<{ configFile?: string }>().configFile);
  program = new PlacementCommand("placement")
    .description("OpenStack Placement API server and operator commands.")
    .option(
      "--config-file <path>",
      "Placement's oslo.config file (default: PLACEMENT_CONFIG_FILE, else /etc/placement/placement.conf when it exists); the environment wins over it",
    )
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({
      writeOut: io.stdout,
      writeErr: stderr,
      outputError: (text, write) => write(`placement: ${text.replace(/^error: /, "")}`),
    })
    .showHelpAfterError("(run 'placement --help' for the commands)")
    .exitOverride()
    .addHelpText("after", SETTINGS_HELP);
  // Commands made from here on copy the root's output and exit handling.
  for (const mod of await loadCommands()) mod.register(program, cli);
  return { program, cli };
}

/** Runs the command line; resolves with the exit code, or KEEP_RUNNING while a server runs. */
export async function runCli(argv: string[], io: CliIo = { env: process.env, stdout: (t) => process.stdout.write(t) }): Promise<ActionResult> {
  const stderr = (t: string) => void process.stderr.write(t);
  const { program, cli } = await buildProgram(io, stderr);
  if (argv.length === 0) {
    program.outputHelp();
    return ExitCode.OK;
  }
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help asked for exits 0; commander has already printed why anything else failed.
      return err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    }
    stderr(describeFailure(err));
    return ExitCode.ERROR;
  }
  return cli.result ?? ExitCode.OK;
}

/** One line for the failure, and its root cause (with SQLSTATE or errno) when there is one. */
export function describeFailure(err: unknown): string {
  const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
  if (err instanceof ConfigError || !(err instanceof Error) || !err.cause) return `placement: ${message}\n`;
  const cause = rootCause(err);
  return `placement: ${message}\n  cause: ${cause.message}${cause.code ? ` (${cause.code})` : ""}\n`;
}
