/**
 * Graceful shutdown with requests in flight: SIGTERM lets every request the
 * server already has finish (here: writes queued behind a row lock), then
 * the process exits 0; a second signal does not wait, and what it cut off is
 * rolled back by PostgreSQL, never half applied.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT, USER } from "../../bench/faults/workload.js";
import { createProvider, usedOn } from "../allocations/fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startServerProcess } from "../support/server-process.js";
import { expectTableInvariants, holdProviderLock, ownSql, waitFor } from "./support.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

const own = () => ({ sql: ownSql(db.url) });

function claim(baseUrl: string, provider: string): Promise<number | "dropped"> {
  return fetch(`${baseUrl}/allocations/${randomUUID()}`, {
    method: "PUT",
    headers: { "x-auth-token": "admin", "content-type": "application/json", "openstack-api-version": "placement 1.39" },
    body: JSON.stringify({
      allocations: { [provider]: { resources: { VCPU: 1 } } },
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: null,
      consumer_type: "INSTANCE",
    }),
  }).then(
    (res) => res.status,
    () => "dropped" as const,
  );
}

const lockWaiters = async () =>
  Number((await own().sql("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))[0].n);

describe("shutdown under load", () => {
  it("finishes every in-flight request after SIGTERM, then exits 0", async () => {
    const server = await startServerProcess({ DATABASE_URL: db.url, PLACEMENT_WORKERS: "2", LOG_LEVEL: "warn" });
    const rp = await createProvider(own(), { VCPU: { total: 64 } });
    const lock = await holdProviderLock(db.url, rp.id);
    let replies: Array<number | "dropped">;
    try {
      const pending = Array.from({ length: 10 }, () => claim(server.baseUrl, rp.uuid));
      await waitFor(async () => ((await lockWaiters()) >= 4 ? true : undefined), "writes to queue behind the lock");
      server.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 500));
      await lock.release();
      replies = await Promise.all(pending);
    } finally {
      await lock.release().catch(() => undefined);
    }
    expect(replies).toEqual(Array(10).fill(204));
    expect(await server.stop()).toBe(0);
    expect(await usedOn(own(), rp.id, "VCPU")).toBe(10);
    await expectTableInvariants(db.url);
  });

  it.each(["1", "2"])("with %s worker(s), a second signal exits at once and the cut-off write is rolled back", async (workers) => {
    const server = await startServerProcess({ DATABASE_URL: db.url, PLACEMENT_WORKERS: workers, LOG_LEVEL: "warn" });
    const rp = await createProvider(own(), { VCPU: { total: 64 } });
    const lock = await holdProviderLock(db.url, rp.id);
    try {
      const pending = claim(server.baseUrl, rp.uuid);
      await waitFor(async () => ((await lockWaiters()) >= 1 ? true : undefined), "the write to queue behind the lock");
      server.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
      server.child.kill("SIGTERM");
      expect(await server.stop()).toBe(1);
      expect(await pending).toBe("dropped");
      // Its session is gone with the process: nothing waits on the lock any more.
      await waitFor(async () => ((await lockWaiters()) === 0 ? true : undefined), "the cut-off session to end");
    } finally {
      await lock.release();
    }
    expect(await usedOn(own(), rp.id, "VCPU")).toBe(0);
    await expectTableInvariants(db.url);
  });
});
