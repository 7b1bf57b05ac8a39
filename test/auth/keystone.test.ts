import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeKeystone, type FakeKeystone } from "../support/fake-keystone.js";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

let ks: FakeKeystone;
let t: Harness;
let uncached: Harness;

const keystoneConfig = (ks: FakeKeystone) => ({
  PLACEMENT_AUTH_STRATEGY: "keystone" as const,
  PLACEMENT_KEYSTONE_URL: ks.url,
  PLACEMENT_KEYSTONE_USERNAME: ks.credentials.username,
  PLACEMENT_KEYSTONE_PASSWORD: ks.credentials.password,
  PLACEMENT_KEYSTONE_PROJECT_NAME: ks.credentials.projectName,
  PLACEMENT_ENFORCE_NEW_DEFAULTS: true,
  // The outage test logs an error by design.
  LOG_LEVEL: "silent" as const,
});

beforeAll(async () => {
  ks = await startFakeKeystone();
  t = await startHarness({ config: keystoneConfig(ks) });
  uncached = await startHarness({ config: { ...keystoneConfig(ks), PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: 0 } });
});
afterAll(async () => {
  await t.close();
  await uncached.close();
  await ks.close();
});

const token = (prefix: string) => `${prefix}-${newUuid()}`;

function expectUnauthorized(res: { status: number; headers: Headers; body: any }) {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe(`Keystone uri="${ks.url}"`);
  expect(res.body.errors[0]).toMatchObject({ status: 401, title: "Unauthorized" });
  expect(res.body.errors[0].detail).toContain("The request you have made requires authentication.");
}

describe("keystone strategy", () => {
  it("accepts a valid token and maps its roles and project into the request", async () => {
    const admin = token("admin");
    ks.issue(admin, { userId: "u-admin", projectId: newUuid(), roles: ["admin", "member", "reader"] });
    const res = await t.request("GET", "/resource_providers", { token: admin });
    expect(res.status).toBe(200);

    // The project is what decides GET /usages for a reader.
    const project = newUuid();
    const reader = token("reader");
    ks.issue(reader, { userId: "u-reader", projectId: project, roles: ["reader"] });
    expect((await t.request("GET", "/resource_providers", { token: reader })).status).toBe(403);
  });

  it("ignores noauth2's headers: roles come from Keystone only", async () => {
    const member = token("member");
    ks.issue(member, { userId: "u-member", projectId: newUuid(), roles: ["member"] });
    const res = await t.request("GET", "/resource_providers", { token: member, headers: { "x-roles": "admin" } });
    expect(res.status).toBe(403);
    expect(res.body.errors[0].detail).toContain("Policy does not allow placement:resource_providers:list to be performed.");
  });

  it("answers 401 with a challenge when the token is missing", async () => {
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: null }));
  });

  it("answers 401 for a malformed token without asking Keystone", async () => {
    const before = ks.validations;
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: "not a token" }));
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: "x".repeat(9000) }));
    expect(ks.validations).toBe(before);
  });

  it("answers 401 for a forged token Keystone never issued, asking Keystone once", async () => {
    const forged = token("forged");
    const before = ks.validations;
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: forged }));
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: forged }));
    expect(ks.validations).toBe(before + 1);
  });

  it("answers 401 for an expired token, whether Keystone hides it or reports it", async () => {
    const hidden = token("expired");
    ks.issue(hidden, { userId: "u", projectId: newUuid(), roles: ["admin"], expiresAt: new Date(Date.now() - 1000) });
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: hidden }));

    const reported = token("expired");
    ks.issue(reported, {
      userId: "u",
      projectId: newUuid(),
      roles: ["admin"],
      expiresAt: new Date(Date.now() - 1000),
      reportExpired: true,
    });
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: reported }));
  });

  it("caches a valid token for the configured time, and not at all with 0", async () => {
    const admin = token("cached");
    ks.issue(admin, { userId: "u", projectId: newUuid(), roles: ["admin"] });
    const before = ks.validations;
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
    expect(ks.validations).toBe(before + 1);

    // With no cache a revoked token stops working at once.
    const revoked = token("revoked");
    ks.issue(revoked, { userId: "u", projectId: newUuid(), roles: ["admin"] });
    expect((await uncached.request("GET", "/resource_providers", { token: revoked })).status).toBe(200);
    ks.revoke(revoked);
    expectUnauthorized(await uncached.request("GET", "/resource_providers", { token: revoked }));
  });

  it("never caches a token past its expiry", async () => {
    const shortLived = token("short");
    ks.issue(shortLived, { userId: "u", projectId: newUuid(), roles: ["admin"], expiresAt: new Date(Date.now() + 300) });
    expect((await t.request("GET", "/resource_providers", { token: shortLived })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: shortLived }));
  });

  it("renews its own service token when Keystone rejects it", async () => {
    ks.revokeServiceTokens();
    const admin = token("renew");
    ks.issue(admin, { userId: "u", projectId: newUuid(), roles: ["admin"] });
    const logins = ks.serviceLogins;
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
    expect(ks.serviceLogins).toBe(logins + 1);
  });

  it("answers 503, not 401 or 500, when Keystone is failing", async () => {
    const admin = token("outage");
    ks.issue(admin, { userId: "u", projectId: newUuid(), roles: ["admin"] });
    ks.failValidationWith(500);
    try {
      const res = await uncached.request("GET", "/resource_providers", { token: admin });
      expect(res.status).toBe(503);
      expect(res.body.errors[0].detail).toContain("identity service is temporarily unavailable");
    } finally {
      ks.failValidationWith(undefined);
    }
    expect((await uncached.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
  });

  it("refuses system-scoped and domain-scoped tokens: every Placement rule is project scoped", async () => {
    const system = token("system");
    ks.issue(system, { userId: "u", system: true, roles: ["admin", "member", "reader"] });
    expect((await t.request("GET", "/resource_providers", { token: system })).status).toBe(403);
    const domain = token("domain");
    ks.issue(domain, { userId: "u", domainId: "default", roles: ["admin"] });
    expect((await t.request("GET", "/resource_providers", { token: domain })).status).toBe(403);
  });

  it("keeps the root document public", async () => {
    expect((await t.request("GET", "/", { token: null })).status).toBe(200);
  });
});

describe("X-Service-Token, as keystonemiddleware handles it", () => {
  let strict: Harness;
  beforeAll(async () => {
    strict = await startHarness({ config: { ...keystoneConfig(ks), PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED: true } });
  });
  afterAll(async () => {
    await strict.close();
  });

  const expiredUser = () => {
    const user = token("expired-admin");
    ks.issue(user, { userId: "u-admin", projectId: newUuid(), roles: ["admin"], expiresAt: new Date(Date.now() - 60_000) });
    return user;
  };
  const service = (roles: string[]) => {
    const svc = token("nova");
    ks.issue(svc, { userId: "u-nova", projectId: newUuid(), roles });
    return svc;
  };

  it("accepts the user's expired token beside a valid service token with a service role, as the user", async () => {
    const user = expiredUser();
    const svc = service(["service"]);
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: user }));
    expect((await t.request("GET", "/resource_providers", { token: user, headers: { "x-service-token": svc } })).status).toBe(200);
    // The identity is the user's: a member's own token beside the service token is still refused by policy.
    const member = token("member");
    ks.issue(member, { userId: "u-member", projectId: newUuid(), roles: ["member"] });
    expect((await t.request("GET", "/resource_providers", { token: member, headers: { "x-service-token": svc } })).status).toBe(403);
  });

  it("refuses the request when the service token itself is invalid or expired", async () => {
    const admin = token("admin");
    ks.issue(admin, { userId: "u-admin", projectId: newUuid(), roles: ["admin"] });
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: admin, headers: { "x-service-token": token("forged") } }));
    const stale = token("stale-nova");
    ks.issue(stale, { userId: "u-nova", projectId: newUuid(), roles: ["service"], expiresAt: new Date(Date.now() - 1000) });
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: admin, headers: { "x-service-token": stale } }));
  });

  it("without a service role: believed but no leeway for an expired user token, or refused when roles are required", async () => {
    const admin = token("admin");
    ks.issue(admin, { userId: "u-admin", projectId: newUuid(), roles: ["admin"] });
    const plain = service(["member"]);
    expect((await t.request("GET", "/resource_providers", { token: admin, headers: { "x-service-token": plain } })).status).toBe(200);
    expectUnauthorized(await t.request("GET", "/resource_providers", { token: expiredUser(), headers: { "x-service-token": plain } }));
    expectUnauthorized(await strict.request("GET", "/resource_providers", { token: admin, headers: { "x-service-token": plain } }));
    const svc = service(["service"]);
    expect((await strict.request("GET", "/resource_providers", { token: admin, headers: { "x-service-token": svc } })).status).toBe(200);
  });
});
