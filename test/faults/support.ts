/** Small helpers the fault tests share. */
import { readFileSync } from "node:fs";
import pg from "pg";
import { expect } from "vitest";
import { emptyConsumers, overcommitted, ownerDrift, usageDrift } from "../allocations/fixtures.js";
import type { Harness } from "../support/harness.js";

/** Polls `probe` until it returns a value; rejects after `ms`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** SQL on a connection of its own, for when the app's pool is the thing kept busy or broken. */
export function ownSql(url: string): Harness["sql"] {
  return async (text, params) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(text, params as unknown[])).rows;
    } finally {
      await client.end();
    }
  };
}

/** The tables' invariants (capacity, stored usage, owner copies, no empty consumer), read on a connection of the test's own. */
export async function expectTableInvariants(url: string): Promise<void> {
  const own = { sql: ownSql(url) };
  expect(await overcommitted(own)).toEqual([]);
  expect(await usageDrift(own)).toEqual([]);
  expect(await ownerDrift(own)).toEqual([]);
  expect(await emptyConsumers(own)).toEqual([]);
}

/** The pids of a process's children (a primary's workers). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A session of our own that holds a provider's row lock until `release()`. */
export async function holdProviderLock(url: string, providerId: number) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("BEGIN");
  await client.query("SELECT id FROM resource_providers WHERE id = $1 FOR UPDATE", [providerId]);
  const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  return {
    pid,
    release: async () => {
      await client.query("COMMIT");
      await client.end();
    },
  };
}
