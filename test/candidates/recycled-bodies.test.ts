/**
 * Answers written over buffers earlier responses left (BodyBuffers), through
 * the real HTTP server: many answers of different sizes in flight at once
 * read exactly as each reads alone (no buffer given back twice, no stale
 * bytes sent). That a buffer goes back only once its response has left is
 * whenSent's, tested with a client that stops reading (when-sent.test.ts):
 * here the kernel takes each answer whole, so that could not show.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startLiveServer, type LiveServer } from "../support/live-server.js";

let db: TestDatabase;
let server: LiveServer;
const PROVIDERS = 600;

beforeAll(async () => {
  db = await createTestDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const uuids = Array.from({ length: PROVIDERS }, () => randomUUID());
    await client.query(
      `INSERT INTO resource_providers (uuid, name) SELECT u, 'recycled-' || u FROM unnest($1::text[]) AS t(u)`,
      [uuids],
    );
    await client.query("UPDATE resource_providers SET root_provider_id = id");
    // Capacities differ per provider, so every summary is its own bytes.
    for (const [rc, base] of [["VCPU", 8], ["MEMORY_MB", 4096], ["DISK_GB", 100]] as const) {
      await client.query(
        `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
         SELECT rp.id, rc.id, $2 + rp.id % 97, 0, 1, $2 + rp.id % 97, 1, 1 FROM resource_providers rp, resource_classes rc WHERE rc.name = $1`,
        [rc, base],
      );
    }
  } finally {
    await client.end();
  }
  server = await startLiveServer(db.url, { LOG_LEVEL: "warn" });
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

/** Queries whose answers range from a few hundred bytes to a quarter of a megabyte. */
const queries = [1, 7, 60, 120, 127, 130, 250, 380, PROVIDERS].flatMap((limit) => [
  `resources=VCPU:1&limit=${limit}`,
  `resources=VCPU:2,MEMORY_MB:1024&limit=${limit}`,
]);

async function answer(query: string): Promise<string> {
  const res = await fetch(`${server.baseUrl}/allocation_candidates?${query}`, {
    headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39" },
  });
  expect(res.status).toBe(200);
  return res.text();
}

describe("recycled response buffers", () => {
  it("answer many queries at once exactly as one at a time", async () => {
    const alone = new Map<string, string>();
    for (const q of queries) alone.set(q, await answer(q));
    for (const [q, text] of alone) {
      const body = JSON.parse(text) as { allocation_requests: unknown[]; provider_summaries: Record<string, unknown> };
      const limit = Number(/limit=(\d+)/.exec(q)![1]);
      expect(body.allocation_requests).toHaveLength(limit);
      expect(Object.keys(body.provider_summaries)).toHaveLength(limit);
    }
    for (let round = 0; round < 4; round++) {
      const order = [...queries, ...queries].sort(() => Math.random() - 0.5);
      const texts = await Promise.all(order.map(answer));
      for (let i = 0; i < order.length; i++) expect(texts[i], order[i]).toBe(alone.get(order[i]));
    }
  });
});
