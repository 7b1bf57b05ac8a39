/**
 * The keystone strategy against a real Keystone (Debian's package, SQLite,
 * under uwsgi): the service's password login, validation of tokens Keystone
 * issued, roles and project as Keystone says, X-Service-Token, revocation
 * (seen once the cache time has passed), expiry, an outage (503) and a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { keystoneUnavailable, startKeystone, type RealKeystone } from "../support/real-keystone.js";

const unavailable = keystoneUnavailable();
if (unavailable) console.warn(`real Keystone tests skipped: ${unavailable}`);

const TOKEN_LIFETIME_S = 40;
const CACHE_S = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== undefined)("keystone strategy against a real Keystone", () => {
  let ks: RealKeystone;
  let t: Harness;

  beforeAll(async () => {
    ks = await startKeystone({ tokenExpirationSeconds: TOKEN_LIFETIME_S });
    t = await startHarness({
      config: {
        PLACEMENT_AUTH_STRATEGY: "keystone",
        PLACEMENT_KEYSTONE_URL: ks.url,
        PLACEMENT_KEYSTONE_USERNAME: ks.users.placement.name,
        PLACEMENT_KEYSTONE_PASSWORD: ks.users.placement.password,
        PLACEMENT_KEYSTONE_PROJECT_NAME: ks.users.placement.project,
        PLACEMENT_KEYSTONE_USER_DOMAIN_ID: "default",
        PLACEMENT_KEYSTONE_PROJECT_DOMAIN_ID: "default",
        PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: CACHE_S,
        PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED: true,
        PLACEMENT_ENFORCE_NEW_DEFAULTS: true,
        LOG_LEVEL: "silent",
      },
    });
  }, 600_000);
  afterAll(async () => {
    await t?.close();
    await ks?.destroy();
  });

  it("accepts Keystone's tokens with the roles and project Keystone gives them", async () => {
    const admin = await ks.issueToken("admin");
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
    const service = await ks.issueToken("nova");
    expect((await t.request("GET", "/resource_providers", { token: service })).status).toBe(200);
    // alice is a member of demo: member implies reader there, and nothing elsewhere.
    const alice = await ks.issueToken("alice");
    expect((await t.request("GET", "/resource_providers", { token: alice })).status).toBe(403);
    expect((await t.request("GET", `/usages?project_id=${ks.users.alice.projectId}`, { token: alice, version: "1.9" })).status).toBe(200);
    expect((await t.request("GET", `/usages?project_id=${ks.users.admin.projectId}`, { token: alice, version: "1.9" })).status).toBe(403);
  }, 180_000);

  it("refuses a token Keystone never issued, and answers with the challenge", async () => {
    const res = await t.request("GET", "/resource_providers", { token: "gAAAAABforgedforgedforged" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(`Keystone uri="${ks.url}"`);
  }, 120_000);

  it("refuses a revoked token once the cache time has passed", async () => {
    const admin = await ks.issueToken("admin");
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
    await ks.revoke(admin);
    await sleep(CACHE_S * 1000 + 500);
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(401);
  }, 120_000);

  it("refuses an expired token, unless a service sends its own token beside it (X-Service-Token)", async () => {
    const admin = await ks.issueToken("admin");
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
    await sleep(TOKEN_LIFETIME_S * 1000 + 1000);
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(401);
    const nova = await ks.issueToken("nova");
    expect((await t.request("GET", "/resource_providers", { token: admin, headers: { "x-service-token": nova } })).status).toBe(200);
    // A member's token is no service token: with service_token_roles_required it is refused.
    const alice = await ks.issueToken("alice");
    const fresh = await ks.issueToken("admin");
    expect((await t.request("GET", "/resource_providers", { token: fresh, headers: { "x-service-token": alice } })).status).toBe(401);
  }, 240_000);

  it("answers 503 while Keystone is down, and serves again once it is back", async () => {
    const admin = await ks.issueToken("admin");
    await ks.stop();
    try {
      const res = await t.request("GET", "/resource_providers", { token: admin });
      expect(res.status).toBe(503);
      expect(res.body.errors[0].detail).toMatch(/identity service is temporarily unavailable/);
    } finally {
      await ks.start();
    }
    expect((await t.request("GET", "/resource_providers", { token: admin })).status).toBe(200);
  }, 180_000);
});
