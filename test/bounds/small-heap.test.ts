/**
 * A real server process with a small heap (48 MB, where `npm start` gives a
 * worker 256 MB; the copy of this cloud and the server's own state take
 * more than 32 MB of it) over a cloud of 3,000 nested compute nodes (15,000
 * providers, built with the bench's own data in a few seconds), asked for
 * every candidate at once: an answer of about 16 MB. Past PLACEMENT_MAX_ANSWER_BYTES the answer is
 * refused whole, before any of it is sent; under it, it is sent whole. Either
 * way the process lives (V8 aborts a process that reaches its heap limit)
 * and answers the next request. Needs the build (`npm run build`), as the
 * other tests that start server processes.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { load } from "../../bench/candidates.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const NODES = 3000;
const HEAP_MB = 48;
const QUERY = "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&resources_N1=SRIOV_NET_VF:1&resources_N2=SRIOV_NET_VF:1&group_policy=isolate";

interface Answer {
  status: number;
  /** The body arrived whole (the server ended it, rather than dropping the connection). */
  complete: boolean;
  text: string;
}

/** A GET read to its end, or to the connection's end if the server drops it. */
function get(base: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      const done = () => resolve({ status: res.statusCode ?? 0, complete: res.complete, text: Buffer.concat(chunks).toString("utf8") });
      res.on("end", done);
      res.on("error", done);
    });
    req.on("error", reject);
  });
}

async function startSmallHeap(db: TestDatabase, env: Record<string, string>): Promise<ServerProcess> {
  return startServerProcess(
    { DATABASE_URL: db.url, NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`, LOG_LEVEL: "warn", ...env },
    60_000,
  );
}

describe(`a server with a ${HEAP_MB} MB heap over ${NODES} nested compute nodes`, () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await load(db.url, "nested", NODES, "ours");
  }, 300_000);

  afterAll(async () => {
    await db?.drop();
  });

  it("sends the whole unlimited answer (under the default bound) and serves the next request", async () => {
    const server = await startSmallHeap(db, {});
    try {
      for (let round = 0; round < 2; round++) {
        const all = await get(server.baseUrl, `/allocation_candidates?${QUERY}`);
        expect(all.status).toBe(200);
        expect(all.complete).toBe(true);
        const body = JSON.parse(all.text);
        expect(body.allocation_requests.length).toBeGreaterThanOrEqual(NODES * 4);
        expect(Object.keys(body.provider_summaries).length).toBeGreaterThanOrEqual(NODES * 5);
      }
      const limited = await get(server.baseUrl, `/allocation_candidates?${QUERY}&limit=1000`);
      expect(limited.status).toBe(200);
      expect(JSON.parse(limited.text).allocation_requests).toHaveLength(1000);
      expect(server.child.exitCode).toBeNull();
      expect(server.output()).not.toMatch(/heap/i);
    } finally {
      await server.stop();
    }
  }, 180_000);

  it("refuses an answer past PLACEMENT_MAX_ANSWER_BYTES with 400 before sending any of it, and serves the next request", async () => {
    const bound = 4 * 1024 * 1024;
    const server = await startSmallHeap(db, { PLACEMENT_MAX_ANSWER_BYTES: String(bound) });
    try {
      for (let round = 0; round < 3; round++) {
        const refused = await get(server.baseUrl, `/allocation_candidates?${QUERY}`);
        expect(refused.status).toBe(400);
        expect(refused.complete).toBe(true);
        const [error] = JSON.parse(refused.text).errors;
        expect(error.detail).toContain(`larger than ${bound} bytes`);
        expect(error.detail).toContain("PLACEMENT_MAX_ANSWER_BYTES");
        expect(error.detail).toContain("limit");
        const limited = await get(server.baseUrl, `/allocation_candidates?${QUERY}&limit=1000`);
        expect(limited.status).toBe(200);
        expect(limited.complete).toBe(true);
        expect(JSON.parse(limited.text).allocation_requests).toHaveLength(1000);
      }
      expect((await get(server.baseUrl, "/")).status).toBe(200);
      expect(server.child.exitCode).toBeNull();
      expect(server.output()).not.toMatch(/heap/i);
    } finally {
      await server.stop();
    }
  }, 180_000);
});
