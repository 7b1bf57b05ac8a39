/**
 * GET /healthcheck as load balancers and orchestrators probe it: no token,
 * oslo.middleware's answers, a database that goes down and comes back, and a
 * probe loop that costs the database one shared connection.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../../src/db/embedded.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../../src/net.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startLiveServer, type LiveServer } from "../support/live-server.js";

describe("/healthcheck with the database up", () => {
  let db: TestDatabase;
  let server: LiveServer;
  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startLiveServer(db.url);
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  it("answers 200 OK as text without a token, JSON when asked, HEAD 204", async () => {
    const text = await fetch(`${server.baseUrl}/healthcheck`);
    expect(text.status).toBe(200);
    expect(text.headers.get("content-type")).toBe("text/plain; charset=UTF-8");
    expect(await text.text()).toBe("OK");
    expect(text.headers.get("openstack-api-version")).toBeNull();

    const json = await fetch(`${server.baseUrl}/healthcheck`, { headers: { accept: "application/json" } });
    expect(json.status).toBe(200);
    expect(await json.text()).toBe('{\n    "detailed": false,\n    "reasons": [\n        "OK"\n    ]\n}');

    const head = await fetch(`${server.baseUrl}/healthcheck`, { method: "HEAD" });
    expect(head.status).toBe(204);
    // Everything else still needs a token.
    expect((await fetch(`${server.baseUrl}/resource_providers`)).status).toBe(401);
  });

  it("serves a probe loop from one connection of the pool, opened once", async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const name = new URL(db.url).pathname.slice(1);
      const backends = async () =>
        (await admin.query("SELECT backend_start FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name])).rows;
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${server.baseUrl}/healthcheck`).then((r) => r.status)));
        expect(answers.every((s) => s === 200)).toBe(true);
      }
      // 200 probes: one connection of the server's pool, opened once.
      const seen = await backends();
      expect(seen.length).toBe(1);
      for (let round = 0; round < 5; round++) await fetch(`${server.baseUrl}/healthcheck`);
      expect(await backends()).toEqual(seen);
    } finally {
      await admin.end();
    }
  });
});

describe("/healthcheck when the database goes down and comes back", () => {
  let dir: string;
  let port: number;
  let embedded: EmbeddedDatabase | undefined;
  let server: LiveServer;
  const log = createLogger("warn");
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "placement-health-"));
    port = await freePort();
    embedded = await startEmbeddedPostgres(dir, port, log);
    server = await startLiveServer(embedded.url, { LOG_LEVEL: "silent" });
  });
  afterAll(async () => {
    await server?.stop();
    await embedded?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function until(status: number): Promise<Response> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await fetch(`${server.baseUrl}/healthcheck`);
      if (res.status === status || Date.now() > deadline) return res;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it("answers 503 with the reason while the database is down, 200 again once it is back", async () => {
    expect((await until(200)).status).toBe(200);
    await embedded!.stop();
    embedded = undefined;
    const down = await until(503);
    expect(down.status).toBe(503);
    expect(await down.text()).toMatch(/^database (unreachable|error)/);
    const json = await fetch(`${server.baseUrl}/healthcheck`, { headers: { accept: "application/json" } });
    expect(json.status).toBe(503);
    expect((await json.json()).reasons[0]).toMatch(/^database /);
    expect((await fetch(`${server.baseUrl}/healthcheck`, { method: "HEAD" })).status).toBe(503);

    embedded = await startEmbeddedPostgres(dir, port, log);
    const up = await until(200);
    expect(up.status).toBe(200);
    expect(await up.text()).toBe("OK");
  });
});
