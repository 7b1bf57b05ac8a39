/**
 * Every write a service makes is retried the same way and counted the same
 * way: PostgreSQL aborts the first attempt with a serialization failure
 * (a trigger raises SQLSTATE 40001 once, off a sequence, which no rollback
 * undoes), the service runs the transaction again, the client sees its
 * ordinary answer, and placement_db_transaction_retries_total counts the
 * retry, for trait and resource class writes as for allocation writes.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
  await t.sql(`
    CREATE FUNCTION fail_first_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval(TG_ARGV[0]::regclass) = 1 THEN
        RAISE EXCEPTION 'injected serialization failure' USING ERRCODE = '40001';
      END IF;
      RETURN NEW;
    END $$`);
  for (const table of ["traits", "resource_classes"]) {
    await t.sql(`CREATE SEQUENCE ${table}_inserts`);
    await t.sql(`CREATE TRIGGER fail_first_insert BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION fail_first_insert('${table}_inserts')`);
  }
});
afterAll(async () => t.close());

async function serializationRetries(): Promise<number> {
  const text = await t.metrics.scrape();
  const line = text.split("\n").find((l) => l.startsWith('placement_db_transaction_retries_total{cause="serialization_failure"}'));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

it("retries a trait write PostgreSQL aborted, answers as usual and counts the retry", async () => {
  const before = await serializationRetries();
  const res = await t.request("PUT", "/traits/CUSTOM_RETRIED");
  expect(res.status).toBe(201);
  expect(await serializationRetries()).toBe(before + 1);
  expect(await t.sql("SELECT name FROM traits WHERE name = 'CUSTOM_RETRIED'")).toHaveLength(1);
});

it("retries a resource class write PostgreSQL aborted, answers as usual and counts the retry", async () => {
  const before = await serializationRetries();
  const res = await t.request("POST", "/resource_classes", { body: { name: "CUSTOM_RETRIED" } });
  expect(res.status).toBe(201);
  expect(await serializationRetries()).toBe(before + 1);
  expect(await t.sql("SELECT name FROM resource_classes WHERE name = 'CUSTOM_RETRIED'")).toHaveLength(1);
});
