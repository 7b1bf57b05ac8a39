/** The command line itself: help for every command, exit codes, `db version` before and after migrating. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { runPlacement } from "../support/cli-process.js";

/** The command paths the top-level help lists ("db migrate", "serve", ...). */
function listedCommands(help: string): string[] {
  const section = help.split("Commands:\n")[1].split("\n\n")[0];
  return section
    .split("\n")
    .filter((line) => /^ {2}\S/.test(line))
    .map((line) => line.trim().split(/\s+(?:\[|<|\s)/)[0].trim())
    .filter((name) => !name.startsWith("help"));
}

describe("placement --help", () => {
  it("lists every command, and every command answers --help with its usage and status 0", async () => {
    const root = await runPlacement(["--help"]);
    expect(root.code).toBe(0);
    const commands = listedCommands(root.stdout);
    expect(commands).toEqual(expect.arrayContaining(["serve", "db migrate", "db version"]));
    for (const command of commands) {
      const own = await runPlacement([...command.split(" "), "--help"]);
      expect(own.code, command).toBe(0);
      expect(own.stdout, command).toContain(`Usage: placement ${command}`);
    }
  });

  it("prints the help with status 0 when given no command, and for `help <command>`", async () => {
    expect((await runPlacement([])).stdout).toContain("db migrate");
    const help = await runPlacement(["help", "db"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: placement db");
  });
});

describe("usage errors exit 2 and say what was wrong", () => {
  it.each([
    [["launch"], "unknown command 'launch'"],
    [["serve", "--bogus"], "unknown option '--bogus'"],
    [["db"], "Usage: placement db"],
  ])("placement %j", async (args, message) => {
    const run = await runPlacement(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
  });
});

describe("placement db version", () => {
  let migrated: TestDatabase;
  let empty: TestDatabase;
  beforeAll(async () => {
    migrated = await createTestDatabase();
    empty = await createTestDatabase({ migrated: false });
  });
  afterAll(async () => {
    await migrated?.drop();
    await empty?.drop();
  });

  it("reports an empty database as unmigrated, then as latest after db migrate", async () => {
    const before = await runPlacement(["db", "version", "--json"], { DATABASE_URL: empty.url });
    expect(before.code).toBe(0);
    const was = JSON.parse(before.stdout);
    expect(was.current).toBeNull();
    expect(was.applied).toBe(0);
    expect(was.pending.length).toBeGreaterThan(0);
    expect(was.pending[was.pending.length - 1]).toBe(was.latest);

    expect((await runPlacement(["db", "migrate"], { DATABASE_URL: empty.url })).code).toBe(0);
    const after = JSON.parse((await runPlacement(["db", "version", "--json"], { DATABASE_URL: empty.url })).stdout);
    expect(after).toEqual({ current: was.latest, latest: was.latest, applied: was.pending.length, pending: [] });
  });

  it("prints text without --json", async () => {
    const run = await runPlacement(["db", "version"], { DATABASE_URL: migrated.url });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^current: \S+\nlatest: {2}\S+\n$/);
  });

  it("exits 1 with the cause when the database cannot be reached", async () => {
    const run = await runPlacement(["db", "version"], { DATABASE_URL: "postgresql://postgres@127.0.0.1:1/none" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^placement: .*ECONNREFUSED/);
  });
});
