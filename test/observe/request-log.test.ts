/**
 * The request log as an operator reads it: one line per request with who,
 * what and how it went; a 500 also logged with its root cause; never a token
 * or a body.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeKeystone, type FakeKeystone } from "../support/fake-keystone.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startLiveServer, waitForLine, type LiveServer } from "../support/live-server.js";

let db: TestDatabase;
let ks: FakeKeystone;
let server: LiveServer;
let textServer: LiveServer;
const token = `tok-${randomUUID()}`;
const userId = `user-${randomUUID()}`;
const projectId = randomUUID();

beforeAll(async () => {
  db = await createTestDatabase();
  ks = await startFakeKeystone();
  ks.issue(token, { userId, projectId, roles: ["admin"] });
  const keystone = {
    PLACEMENT_AUTH_STRATEGY: "keystone" as const,
    PLACEMENT_KEYSTONE_URL: ks.url,
    PLACEMENT_KEYSTONE_USERNAME: ks.credentials.username,
    PLACEMENT_KEYSTONE_PASSWORD: ks.credentials.password,
    PLACEMENT_KEYSTONE_PROJECT_NAME: ks.credentials.projectName,
  };
  server = await startLiveServer(db.url, keystone);
  textServer = await startLiveServer(db.url, { ...keystone, LOG_FORMAT: "text" });
});
afterAll(async () => {
  await server?.stop();
  await textServer?.stop();
  await ks?.close();
  await db?.drop();
});

const headers = (extra: Record<string, string> = {}) => ({
  "x-auth-token": token,
  "openstack-api-version": "placement 1.39",
  "content-type": "application/json",
  ...extra,
});

async function requestLine(s: LiveServer, res: Response): Promise<Record<string, any>> {
  const id = res.headers.get("x-openstack-request-id")!;
  const line = await waitForLine(s.lines, (l) => l.includes(`"msg":"request"`) && l.includes(id));
  return JSON.parse(line);
}

function expectNoSecrets(s: LiveServer, secrets: string[]) {
  for (const line of s.lines) for (const secret of secrets) expect(line).not.toContain(secret);
}

describe("request log (JSON)", () => {
  it("logs a success with every field, the query included and the body's real size", async () => {
    const name = `BODY-SECRET-${randomUUID()}`;
    const created = await fetch(`${server.baseUrl}/resource_providers`, { method: "POST", headers: headers(), body: JSON.stringify({ name }) });
    expect(created.status).toBe(200);
    const res = await fetch(`${server.baseUrl}/resource_providers?name=${name}`, { headers: headers() });
    const body = await res.arrayBuffer();
    const line = await requestLine(server, res);
    expect(line).toMatchObject({
      level: "info",
      remote_addr: expect.stringMatching(/127\.0\.0\.1$/),
      method: "GET",
      path: `/resource_providers?name=${name}`,
      route: "/resource_providers",
      status: 200,
      bytes: body.byteLength,
      microversion: "1.39",
      request_id: res.headers.get("x-openstack-request-id"),
      global_request_id: null,
      user_id: userId,
      project_id: projectId,
    });
    expect(line.duration_ms).toBeGreaterThan(0);
    expectNoSecrets(server, [token]);
    // The POST's body (the name) is only in the GET's query string, never from the POST.
    const post = await requestLine(server, created);
    expect(JSON.stringify(post)).not.toContain(name);
  });

  it("logs a 4xx with its status, the caller's global request id and the route template, not the uuid", async () => {
    const global = `req-${randomUUID()}`;
    const uuid = randomUUID();
    const res = await fetch(`${server.baseUrl}/resource_providers/${uuid}`, {
      method: "PUT",
      headers: headers({ "x-openstack-request-id": global }),
      body: JSON.stringify({ name: "BODY-SECRET-put" }),
    });
    expect(res.status).toBe(404);
    await res.arrayBuffer();
    const line = await requestLine(server, res);
    expect(line).toMatchObject({ method: "PUT", status: 404, route: "/resource_providers/:uuid", global_request_id: global });
    expect(line.path).toBe(`/resource_providers/${uuid}`);
    expect(line.bytes).toBeGreaterThan(0);
    expectNoSecrets(server, [token, "BODY-SECRET-put"]);
  });

  it("logs an unauthenticated request without the token it carried", async () => {
    const bad = `tok-bad-${randomUUID()}`;
    const res = await fetch(`${server.baseUrl}/resource_providers`, { headers: headers({ "x-auth-token": bad }) });
    expect(res.status).toBe(401);
    const line = await requestLine(server, res);
    expect(line).toMatchObject({ status: 401, user_id: null, project_id: null });
    expectNoSecrets(server, [bad]);
  });

  it("logs a 500 with the request id and the database's message and SQLSTATE, and tells the client nothing internal", async () => {
    // Break this test database's schema under the running server.
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query("ALTER TABLE traits RENAME TO traits_moved_away");
    try {
      const res = await fetch(`${server.baseUrl}/traits`, { headers: headers() });
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(text).not.toContain("traits_moved_away");
      expect(text).not.toContain("relation");
      const id = res.headers.get("x-openstack-request-id")!;
      const error = JSON.parse(await waitForLine(server.lines, (l) => l.includes("unhandled error") && l.includes(id)));
      expect(error).toMatchObject({ level: "error", requestId: id, sqlstate: "42P01", cause: expect.stringMatching(/relation "traits" does not exist/) });
      expect((await requestLine(server, res)).status).toBe(500);
    } finally {
      await admin.query("ALTER TABLE traits_moved_away RENAME TO traits");
      await admin.end();
    }
    expectNoSecrets(server, [token]);
  });
});

describe("request log (LOG_FORMAT=text)", () => {
  it("writes upstream's requestlog line behind oslo's context brackets", async () => {
    const res = await fetch(`${textServer.baseUrl}/resource_classes?x=1`, { headers: headers() });
    const body = await res.arrayBuffer();
    const id = res.headers.get("x-openstack-request-id")!;
    const line = await waitForLine(textServer.lines, (l) => l.includes(id) && l.includes("status:"));
    expect(line).toMatch(
      new RegExp(
        `^\\S+ \\d+ INFO \\[None ${id} ${userId} ${projectId}\\] \\S*127\\.0\\.0\\.1 "GET /resource_classes\\?x=1" status: 200 len: ${body.byteLength} microversion: 1\\.39 time: \\d+\\.\\d{6}$`,
      ),
    );
    expectNoSecrets(textServer, [token]);
  });
});
