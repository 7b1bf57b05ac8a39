/**
 * /metrics as Prometheus reads it: a known sequence of requests moves the
 * counters by exactly that much, 409s are told apart by kind, labels are
 * route templates, and the metrics port needs no token while the API port does.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startLiveServer, type LiveServer } from "../support/live-server.js";
import { prometheusParserMissing, Scrape, scrape } from "../support/prometheus.js";

let db: TestDatabase;
let server: LiveServer;
let metricsUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const port = await freePort();
  server = await startLiveServer(db.url, { PLACEMENT_METRICS_PORT: port, PLACEMENT_METRICS_ON_API_PORT: true, PLACEMENT_DB_POOL_SIZE: 3 });
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

async function api(method: string, path: string, body?: unknown, token = "admin"): Promise<Response> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { "x-auth-token": token, "openstack-api-version": "placement 1.39", "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res;
}

const allocation = (rp: string, vcpu: number, generation: number | null) => ({
  allocations: { [rp]: { resources: { VCPU: vcpu } } },
  consumer_generation: generation,
  project_id: randomUUID(),
  user_id: randomUUID(),
  consumer_type: "INSTANCE",
});

describe.skipIf(prometheusParserMissing)(`GET /metrics${prometheusParserMissing ? ` (skipped: ${prometheusParserMissing})` : ""}`, () => {
  it("moves the request, conflict, claim and candidate metrics by exactly the requests made", async () => {
    const before = await scrape(metricsUrl);
    const rp = randomUUID();
    expect((await api("POST", "/resource_providers", { name: `metrics-${rp}`, uuid: rp })).status).toBe(200);
    const inventory = { inventories: { VCPU: { total: 4 } }, resource_provider_generation: 0 };
    expect((await api("PUT", `/resource_providers/${rp}/inventories`, inventory)).status).toBe(200);
    expect((await api("PUT", `/resource_providers/${rp}/inventories`, inventory)).status).toBe(409);
    const consumer = randomUUID();
    expect((await api("PUT", `/allocations/${consumer}`, allocation(rp, 8, null))).status).toBe(409);
    expect((await api("PUT", `/allocations/${consumer}`, allocation(rp, 1, null))).status).toBe(204);
    expect((await api("PUT", `/allocations/${consumer}`, allocation(rp, 2, null))).status).toBe(409);
    for (let i = 0; i < 3; i++) expect((await api("GET", `/resource_providers/${randomUUID()}`)).status).toBe(404);
    expect((await api("GET", "/allocation_candidates?resources=VCPU:1")).status).toBe(200);
    const after = await scrape(metricsUrl);

    const delta = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
    const requests = "placement_http_requests_total";
    expect(delta(requests, { route: "/resource_providers", method: "POST", status: "200" })).toBe(1);
    expect(delta(requests, { route: "/resource_providers/:uuid/inventories", method: "PUT", status: "409" })).toBe(1);
    expect(delta(requests, { route: "/resource_providers/:uuid", method: "GET", status: "404" })).toBe(3);
    expect(delta(requests, { route: "/allocations/:consumer_uuid", method: "PUT" })).toBe(3);
    expect(delta("placement_http_request_duration_seconds_count", { route: "/resource_providers/:uuid", status: "404" })).toBe(3);
    expect(delta("placement_conflicts_total", { kind: "provider_generation" })).toBe(1);
    expect(delta("placement_conflicts_total", { kind: "capacity" })).toBe(1);
    expect(delta("placement_conflicts_total", { kind: "consumer_generation" })).toBe(1);
    expect(delta("placement_claims_written_total", { route: "/allocations/:consumer_uuid" })).toBe(1);
    expect(delta("placement_allocation_candidates_returned_count", {})).toBe(1);
    expect(delta("placement_allocation_candidates_returned_sum", {})).toBe(1);
    expect(delta("placement_http_response_bytes_count", { route: "/allocation_candidates" })).toBe(1);

    // Bounded labels: templates only, never the uuids that were asked for.
    for (const route of after.labelValues("placement_http_requests", "route")) expect(route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/);
  });

  it("reports the pool and the process", async () => {
    expect((await api("GET", "/resource_providers")).status).toBe(200);
    const s = await scrape(metricsUrl);
    expect(s.value("placement_db_pool_max_connections")).toBe(3);
    expect(s.value("placement_db_pool_connections", { state: "idle" }) + s.value("placement_db_pool_connections", { state: "in_use" })).toBeGreaterThan(0);
    expect(s.has("placement_db_pool_waiting_requests")).toBe(true);
    expect(s.value("process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(s.has("nodejs_eventloop_lag_seconds")).toBe(true);
  });

  it("answers on the API port only to an admin or service caller, on the metrics port to anyone", async () => {
    expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(401);
    expect((await api("GET", "/metrics", undefined, "someone")).status).toBe(403);
    const res = await fetch(`${server.baseUrl}/metrics`, { headers: { "x-auth-token": "admin" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(new Scrape(await res.text()).has("placement_http_requests")).toBe(true);
    expect((await fetch(metricsUrl.replace("/metrics", "/other"))).status).toBe(404);
  });
});
