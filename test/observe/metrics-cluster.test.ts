/** With PLACEMENT_WORKERS=2 one scrape sees both workers: the metrics port and the API port answer the cluster's sums. */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { prometheusParserMissing, scrape } from "../support/prometheus.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

let db: TestDatabase;
let server: ServerProcess;
let metricsUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  server = await startServerProcess({
    DATABASE_URL: db.url,
    PLACEMENT_WORKERS: "2",
    PLACEMENT_DB_POOL_SIZE: "2",
    PLACEMENT_METRICS_PORT: String(port),
    PLACEMENT_METRICS_ON_API_PORT: "true",
  });
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

/** One request on a connection of its own, so the cluster hands requests to both workers. */
function getOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    });
    req.on("error", reject);
  });
}

describe.skipIf(prometheusParserMissing)("metrics across 2 workers", () => {
  it("counts every request whichever worker served it, and sums the workers' pools", async () => {
    const series = { route: "/resource_providers", method: "GET", status: "200" };
    const before = await scrape(metricsUrl);
    for (let i = 0; i < 20; i++) expect(await getOnNewConnection(`${server.baseUrl}/resource_providers`)).toBe(200);
    // A request is counted once its response has left; give the last one a moment.
    await new Promise((r) => setTimeout(r, 100));
    const after = await scrape(metricsUrl);
    expect(after.value("placement_http_requests_total", series) - before.value("placement_http_requests_total", series)).toBe(20);
    // Each worker's pool reports its size of 2: both answered the scrape.
    expect(after.value("placement_db_pool_max_connections")).toBe(4);

    const viaApi = await scrape(`${server.baseUrl}/metrics`, { "x-auth-token": "admin" });
    expect(viaApi.value("placement_http_requests_total", series)).toBe(after.value("placement_http_requests_total", series));
    expect(viaApi.value("placement_db_pool_max_connections")).toBe(4);
  });
});
