/**
 * executePrepared: inside a transaction on a session connection the
 * statement is prepared once under its name and then reused by later
 * transactions on that connection, with results parsed as drizzle's execute
 * parses them; outside a transaction, and on a pool behind a transaction
 * pooler, nothing is prepared.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { NO_LIMITS, openDatabase, type Database } from "../../src/db/database.js";
import { executePrepared } from "../../src/db/prepared.js";
import { createLogger } from "../../src/log.js";
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
      const prepared = await executePrepared(tx, QUERY);
      const plain = await tx.execute(QUERY);
      return { prepared: prepared.rows[0], plain: plain.rows[0], names: (await tx.execute(PREPARED)).rows };
    });
    expect(first.prepared).toMatchObject({ answer: 42, big: 9007199254740991, word: "x" });
    expect(typeof first.prepared.at).toBe("string");
    expect(Object.keys(first.prepared)).toEqual(Object.keys(first.plain));
    expect(first.names).toHaveLength(1);
    expect(first.names[0].statement).toContain("AS answer");

    // A later transaction on the same connection binds the prepared statement again instead of preparing it anew.
    const second = await db.transaction(async (tx) => {
      const again = await executePrepared(tx, sql`SELECT ${7}::int AS answer, 9007199254740991::bigint AS big, now() AS at, ${"y"}::text AS word`);
      return { row: again.rows[0], names: (await tx.execute(PREPARED)).rows };
    });
    expect(second.row).toMatchObject({ answer: 7, word: "y" });
    expect(second.names).toEqual(first.names);
  });
});

it("prepares nothing outside a transaction", async () => {
  await withDatabase(false, async ({ db }) => {
    expect((await executePrepared(db, QUERY)).rows[0]).toMatchObject({ answer: 42 });
    expect((await db.execute(PREPARED)).rows).toEqual([]);
  });
});

it("prepares nothing behind a transaction pooler, where the next statement may reach another connection", async () => {
  await withDatabase(true, async ({ db }) => {
    const names = await db.transaction(async (tx) => {
      expect((await executePrepared(tx, QUERY)).rows[0]).toMatchObject({ answer: 42 });
      return (await tx.execute(PREPARED)).rows;
    });
    expect(names).toEqual([]);
  });
});
