/**
 * Bigint and numeric results are numbers on the server's pool, through
 * drizzle (which brings parsers of its own to every query) as through the
 * pool directly, while any other pg client in the process keeps pg's
 * defaults (strings): the parsers belong to the pool, not to the process.
 */
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type Database } from "../../src/db/database.js";
import { createLogger } from "../../src/log.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

let testDb: TestDatabase;
let database: Database;
beforeAll(async () => {
  testDb = await createTestDatabase();
  database = openDatabase(testDb.url, 2, createLogger("silent"));
});
afterAll(async () => {
  await database.close();
  await testDb.drop();
});

const QUERY = "SELECT 9007199254740991::bigint AS big, 2.5::numeric AS ratio, now() AS at";

it("gives numbers through drizzle, dates as drizzle keeps them", async () => {
  const { rows } = await database.db.execute(sql.raw(QUERY));
  expect(rows[0].big).toBe(9007199254740991);
  expect(rows[0].ratio).toBe(2.5);
  expect(typeof rows[0].at).toBe("string"); // drizzle's own parser for timestamps still applies
});

it("gives numbers inside a drizzle transaction", async () => {
  const big = await database.db.transaction(async (tx) => (await tx.execute(sql`SELECT count(*) AS n FROM generate_series(1, 3)`)).rows[0].n);
  expect(big).toBe(3);
});

it("gives numbers through the pool itself", async () => {
  const { rows } = await database.pool.query(QUERY);
  expect(rows[0].big).toBe(9007199254740991);
  expect(rows[0].ratio).toBe(2.5);
  expect(rows[0].at).toBeInstanceOf(Date);
});

it("leaves every other pg client in the process with pg's defaults", async () => {
  const client = new pg.Client({ connectionString: testDb.url });
  await client.connect();
  try {
    const { rows } = await client.query(QUERY);
    expect(rows[0].big).toBe("9007199254740991");
    expect(rows[0].ratio).toBe("2.5");
  } finally {
    await client.end();
  }
});
