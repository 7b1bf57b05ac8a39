/**
 * SIGTERM while a request is in flight: the server stops accepting, answers
 * the request it already has, then exits 0.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startServerProcess } from "../support/server-process.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());

describe("graceful shutdown", () => {
  it.each(["1", "2"])("with %s worker(s), finishes an in-flight request after SIGTERM, then refuses new connections and exits 0", async (workers) => {
    const server = await startServerProcess({ DATABASE_URL: db.url, PLACEMENT_WORKERS: workers });
    const name = `created-during-shutdown-${workers}`;
    const body = JSON.stringify({ name });
    const { port } = new URL(server.baseUrl);

    // Headers now, body later: the request is in flight when SIGTERM arrives.
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port: Number(port),
          method: "POST",
          path: "/resource_providers",
          headers: {
            "x-auth-token": "admin",
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            "openstack-api-version": "placement 1.20",
          },
        },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.flushHeaders();
      setTimeout(() => {
        server.child.kill("SIGTERM");
        setTimeout(() => req.end(body), 300);
      }, 300);
    });

    const answered = await response.catch((e) => {
      throw new Error(`${e.message}; server said: ${server.output()}`);
    });
    expect(answered.status, answered.text).toBe(200);
    expect(JSON.parse(answered.text).name).toBe(name);
    expect(await server.stop()).toBe(0);
    await expect(fetch(`${server.baseUrl}/`).catch((e) => e.cause?.code)).resolves.toBe("ECONNREFUSED");
  });
});
