/** noauth2 and trusted-proxy through the real app, plus the start-up checks that keep them safe. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkAuthStartup, createAuthenticator } from "../../src/auth/authenticate.js";
import { noauthIdentity } from "../../src/auth/identity.js";
import { ConfigError, testConfig } from "../../src/config.js";
import { createLogger, type Logger } from "../../src/log.js";
import { startHarness, type Harness } from "../support/harness.js";

const silent = createLogger("silent");

describe("noauth2 identities", () => {
  it("follows Placement: user[:project], admin for user admin, headers override", () => {
    expect(noauthIdentity("admin", {})).toMatchObject({ userId: "admin", projectId: "admin", roles: ["admin"] });
    expect(noauthIdentity("admin:admin", {})).toMatchObject({ userId: "admin", projectId: "admin", roles: ["admin"] });
    expect(noauthIdentity("alice:p1", {})).toMatchObject({ userId: "alice", projectId: "p1", roles: [] });
    expect(noauthIdentity("alice", { roles: "reader, member", projectId: "p2" })).toMatchObject({
      projectId: "p2",
      roles: ["reader", "member"],
    });
    expect(noauthIdentity("admin", { roles: "" }).roles).toEqual([]);
    expect(noauthIdentity("alice", { systemScope: "all" })).toMatchObject({ projectId: null, systemScope: "all" });
  });
});

describe("noauth2 start-up", () => {
  const logged: string[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (msg) => logged.push(msg),
    error: () => {},
  };

  it("warns loudly on loopback", () => {
    logged.length = 0;
    checkAuthStartup(testConfig({ HOST: "127.0.0.1" }), log);
    checkAuthStartup(testConfig({ HOST: "::1" }), log);
    checkAuthStartup(testConfig({ HOST: "localhost" }), log);
    expect(logged).toHaveLength(3);
    expect(logged[0]).toMatch(/AUTHENTICATION IS DISABLED/);
  });

  it("refuses a non-loopback address unless explicitly allowed", () => {
    for (const HOST of ["0.0.0.0", "::", "10.1.2.3", "placement.example.com"]) {
      expect(() => checkAuthStartup(testConfig({ HOST }), log)).toThrow(ConfigError);
      expect(() => checkAuthStartup(testConfig({ HOST }), log)).toThrow(/refusing to serve with PLACEMENT_AUTH_STRATEGY=noauth2/);
    }
    expect(() => checkAuthStartup(testConfig({ HOST: "0.0.0.0", PLACEMENT_ALLOW_NOAUTH: true }), log)).not.toThrow();
  });

  it("does not apply to real strategies", () => {
    logged.length = 0;
    checkAuthStartup(testConfig({ HOST: "0.0.0.0", PLACEMENT_AUTH_STRATEGY: "trusted-proxy", PLACEMENT_TRUSTED_PROXIES: ["10.0.0.1"] }), log);
    expect(logged).toHaveLength(0);
  });

  it("refuses incomplete keystone and trusted-proxy settings", () => {
    expect(() => createAuthenticator(testConfig({ PLACEMENT_AUTH_STRATEGY: "keystone" }), silent)).toThrow(
      /keystone needs PLACEMENT_KEYSTONE_URL, PLACEMENT_KEYSTONE_USERNAME, PLACEMENT_KEYSTONE_PASSWORD, PLACEMENT_KEYSTONE_PROJECT_NAME/,
    );
    expect(() => createAuthenticator(testConfig({ PLACEMENT_AUTH_STRATEGY: "trusted-proxy" }), silent)).toThrow(/needs PLACEMENT_TRUSTED_PROXIES/);
    expect(() =>
      createAuthenticator(testConfig({ PLACEMENT_AUTH_STRATEGY: "trusted-proxy", PLACEMENT_TRUSTED_PROXIES: ["10.0.0.0/33"] }), silent),
    ).toThrow(/PLACEMENT_TRUSTED_PROXIES/);
    expect(() =>
      createAuthenticator(testConfig({ PLACEMENT_AUTH_STRATEGY: "trusted-proxy", PLACEMENT_TRUSTED_PROXIES: ["gateway"] }), silent),
    ).toThrow(/PLACEMENT_TRUSTED_PROXIES/);
  });
});

describe("trusted-proxy strategy", () => {
  let t: Harness;
  beforeAll(async () => {
    t = await startHarness({
      config: { PLACEMENT_AUTH_STRATEGY: "trusted-proxy", PLACEMENT_TRUSTED_PROXIES: ["10.0.0.5", "192.168.10.0/24", "fd00::/8"] },
    });
  });
  afterAll(async () => t.close());

  /** Sends a request as if it arrived on a socket from `peer` (what @hono/node-server hands the app). */
  const from = async (peer: string | undefined, headers: Record<string, string>) => {
    const env = peer === undefined ? undefined : { incoming: { socket: { remoteAddress: peer } } };
    const res = await t.app.request(
      "/resource_providers",
      { headers: { accept: "application/json", "openstack-api-version": "placement latest", ...headers } },
      env,
    );
    return { status: res.status, body: await res.json() };
  };
  const adminHeaders = { "x-identity-status": "Confirmed", "x-user-id": "u1", "x-project-id": "p1", "x-roles": "admin,member,reader" };

  it("believes identity headers from a configured proxy address or range", async () => {
    expect((await from("10.0.0.5", adminHeaders)).status).toBe(200);
    expect((await from("::ffff:192.168.10.77", adminHeaders)).status).toBe(200);
    expect((await from("fd00::1", adminHeaders)).status).toBe(200);
  });

  it("ignores the same headers from any other address", async () => {
    for (const peer of ["10.0.0.6", "192.168.11.1", "127.0.0.1", "::1", undefined]) {
      const res = await from(peer, adminHeaders);
      expect(res.status, String(peer)).toBe(401);
      expect(res.body.errors[0].title).toBe("Unauthorized");
    }
  });

  it("ignores an X-Auth-Token: noauth2's tokens mean nothing here", async () => {
    expect((await from("10.0.0.9", { "x-auth-token": "admin" })).status).toBe(401);
  });

  it("refuses what the proxy marks invalid or leaves without a user", async () => {
    expect((await from("10.0.0.5", { ...adminHeaders, "x-identity-status": "Invalid" })).status).toBe(401);
    const { "x-user-id": _user, ...noUser } = adminHeaders;
    expect((await from("10.0.0.5", noUser)).status).toBe(401);
  });

  it("authorizes with the forwarded roles and project", async () => {
    const res = await from("10.0.0.5", { ...adminHeaders, "x-roles": "member,reader" });
    expect(res.status).toBe(403);
    expect((await from("10.0.0.5", { ...adminHeaders, "x-roles": "service" })).status).toBe(200);
    expect((await from("10.0.0.5", { ...adminHeaders, "openstack-system-scope": "all" })).status).toBe(403);
  });
});
