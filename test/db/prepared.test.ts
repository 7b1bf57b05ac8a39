/**
 * executePrepared: on a connection of a pool that keeps sessions the
 * statement is prepared once under its readable name and then reused by
 * later transactions on that connection, with results parsed as drizzle's
 * execute parses them; another text of the same name gets a name of its
 * own; on a pool behind a transaction pooler nothing is prepared. The
 * cloud view's statements, sent to a pg client itself, are named by the
 * same pool's namer.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { NO_LIMITS, openDatabase, type Database } from "../../src/db/database.js";
import { executePrepared, namedText, statementNamer } from "../../src/db/prepared.js";
import { createLogger } from "../../src/log.js";
import { CloudView } from "../../src/services/candidates/cloud-view.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase();
});
afterAll(async () => {
  await testDb.drop();
});

const QUERY = sql`SELECT ${42}::int AS answer, 9007199254740991::bigint AS big, now() AS at, ${"x"}::text AS word`;
const PREPARED = sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'pl\\_%'`;

async function withDatabase<T>(transactionPooler: boolean, fn: (d: Database) => Promise<T>): Promise<T> {
  // One connection, so every transaction below runs on the same session.
  const d = openDatabase(testDb.url, 1, createLogger("silent"), { ...NO_LIMITS, transactionPooler });
  try {
    return await fn(d);
  } finally {
    await d.close();
  }
}

it("prepares a statement once per connection and reuses it, with drizzle's parsing", async () => {
  await withDatabase(false, async ({ db }) => {
    const first = await db.transaction(async (tx) => {
      const prepared = await executePrepared(tx, QUERY, "pl_answer");
      const plain = await tx.execute(QUERY);
      return { prepared: prepared.rows[0], plain: plain.rows[0], names: (await tx.execute(PREPARED)).rows };
    });
    expect(first.prepared).toMatchObject({ answer: 42, big: 9007199254740991, word: "x" });
    expect(typeof first.prepared.at).toBe("string");
    expect(Object.keys(first.prepared)).toEqual(Object.keys(first.plain));
    expect(first.names).toHaveLength(1);
    expect(first.names[0]).toMatchObject({ name: "pl_answer" });
    expect(first.names[0].statement).toContain("AS answer");

    // A later transaction on the same connection binds the prepared statement again instead of preparing it anew.
    const second = await db.transaction(async (tx) => {
      const again = await executePrepared(tx, sql`SELECT ${7}::int AS answer, 9007199254740991::bigint AS big, now() AS at, ${"y"}::text AS word`, "pl_answer");
      return { row: again.rows[0], names: (await tx.execute(PREPARED)).rows };
    });
    expect(second.row).toMatchObject({ answer: 7, word: "y" });
    expect(second.names).toEqual(first.names);
  });
});

it("gives another text of the same name a name of its own, outside a transaction too", async () => {
  await withDatabase(false, async ({ db }) => {
    expect((await executePrepared(db, QUERY, "pl_answer")).rows[0]).toMatchObject({ answer: 42 });
    expect((await executePrepared(db, sql`SELECT ${43}::int AS answer`, "pl_answer")).rows[0]).toMatchObject({ answer: 43 });
    const names = (await db.execute(PREPARED)).rows.map((r) => r.name).sort();
    expect(names).toEqual(["pl_answer", "pl_answer_2"]);
  });
});

it("names at most so many texts, and runs the rest unnamed rather than give a name twice", () => {
  const nameOf = statementNamer(2);
  expect(nameOf("/*named:pl_a*/ SELECT 1")).toBe("pl_a");
  expect(nameOf("/*named:pl_a*/ SELECT 2")).toBe("pl_a_2");
  expect(nameOf("/*named:pl_a*/ SELECT 3")).toBeUndefined();
  expect(nameOf("/*named:pl_a*/ SELECT 1")).toBe("pl_a");
  expect(nameOf("SELECT 1")).toBeUndefined();
});

it("prepares nothing behind a transaction pooler, where the next statement may reach another connection", async () => {
  await withDatabase(true, async ({ db }) => {
    const names = await db.transaction(async (tx) => {
      expect((await executePrepared(tx, QUERY, "pl_answer")).rows[0]).toMatchObject({ answer: 42 });
      return (await tx.execute(PREPARED)).rows;
    });
    expect(names).toEqual([]);
  });
});

it("names the cloud view's statements through the pool, as every other, and nothing behind a transaction pooler", async () => {
  const VIEW = sql`SELECT name FROM pg_prepared_statements WHERE name LIKE 'ac\\_view\\_%' ORDER BY name`;
  const viewNames = async (transactionPooler: boolean) =>
    withDatabase(transactionPooler, async ({ db }) => {
      // A full read, then a delta.
      const view = new CloudView(db);
      for (let i = 0; i < 2; i++) expect(await view.read({ traits: [], aggregates: [] }, (read) => read.flat)).toBe(true);
      return (await db.execute(VIEW)).rows.map((r) => r.name);
    });
  expect(await viewNames(false)).toEqual(["ac_view_delta", "ac_view_full"]);
  expect(await viewNames(true)).toEqual([]);
});

it("refuses a name that would not read as one", () => {
  expect(namedText("pl_ok", "SELECT 1")).toBe("/*named:pl_ok*/ SELECT 1");
  expect(() => namedText("pl ok*/ DROP", "SELECT 1")).toThrow(/not a statement name/);
});
