/**
 * The server behind a real PgBouncer 1.18 in transaction mode
 * (PLACEMENT_DB_POOLER=transaction): its pool is far larger than PgBouncer's
 * server pool, so every statement and transaction lands on whichever server
 * connection is free. Named prepared statements would collide there
 * ("prepared statement ... already exists"), start-up settings are refused,
 * and LISTEN would listen on a connection someone else gets next; the tests
 * show candidates, claims and the change feed working regardless.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net.js";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { brokenInvariants, claimBody } from "../claims/support.js";
import { pgBouncerMissing, type PgBouncer } from "../support/clusters.js";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { bouncerForTestDatabases, through } from "./support.js";

const unavailable = pgBouncerMissing();
if (unavailable) console.warn(`PgBouncer tests skipped: ${unavailable}`);

const CLIENTS = 80;

let bouncer: PgBouncer;
let t: Harness;

describe.skipIf(unavailable !== undefined)("through PgBouncer in transaction mode", () => {
  beforeAll(async () => {
    // Four server connections for eighty clients: each statement meets connections other clients prepared on.
    bouncer = await bouncerForTestDatabases(await freePort(), 4);
    t = await startHarness({
      poolSize: CLIENTS,
      config: { PLACEMENT_DB_POOLER: "transaction", PLACEMENT_DB_ACQUIRE_TIMEOUT_MS: 30_000 },
      via: (url) => through(bouncer, url),
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await bouncer?.stop();
  });

  it(`answers ${CLIENTS} concurrent candidate requests of several shapes, all 200`, async () => {
    const nodes: Provider[] = [];
    for (let i = 0; i < 12; i++) nodes.push(await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 }, DISK_GB: { total: 100 } }));
    const shapes = [
      "resources=VCPU:1",
      "resources=VCPU:1,MEMORY_MB:512",
      "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&limit=3",
      "resources=DISK_GB:5&limit=50",
    ];
    const replies = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) => t.request("GET", `/allocation_candidates?${shapes[i % shapes.length]}`, { version: "1.39" })),
    );
    expect(replies.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
    for (const [i, r] of replies.entries()) {
      const shape = shapes[i % shapes.length];
      const expected = shape.includes("limit=3") ? 3 : nodes.length;
      expect(r.body.allocation_requests).toHaveLength(expected);
    }
  });

  it("lets concurrent claimers fill a cloud exactly, with nothing over capacity", async () => {
    for (const table of ["allocations", "consumers", "inventories", "resource_provider_aggregates", "resource_providers"]) await t.sql(`DELETE FROM ${table}`);
    for (let i = 0; i < 5; i++) await createProvider(t, { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } });
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (;;) {
          const r = await t.request("POST", "/claims?resources=VCPU:1,MEMORY_MB:1024&limit=10", { body: claimBody(), version: "1.39" });
          statuses.push(r.status);
          if (r.status !== 200) {
            expect(r.status, r.text).toBe(409);
            return;
          }
        }
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("wakes a long-polling change feed reader by polling, since LISTEN cannot work through it", async () => {
    const { body: start } = await t.request("GET", "/changes", { version: "1.39" });
    const waiting = t.request("GET", `/changes?since=${start.next}&timeout=10`, { version: "1.39" });
    await new Promise((r) => setTimeout(r, 300));
    const uuid = newUuid();
    expect((await t.request("POST", "/resource_providers", { body: { name: `feed-${uuid}`, uuid }, version: "1.39" })).status).toBe(200);
    const sent = performance.now();
    const reply = await waiting;
    expect(reply.status).toBe(200);
    expect(reply.body.changes.map((c: { resource_provider_uuid: string }) => c.resource_provider_uuid)).toContain(uuid);
    // Within the polling slice (1 s) and well before the reader's own 10 s timeout.
    expect(performance.now() - sent).toBeLessThan(5_000);
  });
});
