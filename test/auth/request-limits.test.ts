/** Oversized and hostile input: 413 past the body limit, 401 before any body is read, never a 500. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

const LIMIT = 2048;
let t: Harness;
beforeAll(async () => {
  t = await startHarness({ config: { PLACEMENT_MAX_BODY_BYTES: LIMIT } });
});
afterAll(async () => t.close());

const bigBody = () => JSON.stringify({ name: "x".repeat(LIMIT), uuid: newUuid() });

describe("request body limit", () => {
  it("answers 413 in Placement's error format past the limit", async () => {
    const res = await t.request("POST", "/resource_providers", { body: bigBody() });
    expect(res.status).toBe(413);
    expect(res.body.errors[0]).toMatchObject({ status: 413, title: "Request Entity Too Large" });
  });

  it("judges a body by its declared length", async () => {
    const body = bigBody();
    const res = await t.request("POST", "/resource_providers", { body, headers: { "content-length": String(Buffer.byteLength(body)) } });
    expect(res.status).toBe(413);
    expect(res.body.errors[0]).toMatchObject({ status: 413, title: "Request Entity Too Large" });
    const small = JSON.stringify({ name: `rp-${newUuid()}` });
    const ok = await t.request("POST", "/resource_providers", { body: small, version: "1.20", headers: { "content-length": String(Buffer.byteLength(small)) } });
    expect(ok.status, ok.text).toBe(200);
  });

  it("counts a streamed body that declares no length", async () => {
    const chunk = new TextEncoder().encode(bigBody());
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const res = await t.app.request("/resource_providers", {
      method: "POST",
      headers: { "x-auth-token": "admin", "content-type": "application/json", accept: "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
  });

  it("accepts a body under the limit", async () => {
    const res = await t.request("POST", "/resource_providers", { body: { name: `rp-${newUuid()}` }, version: "1.20" });
    expect(res.status).toBe(200);
  });

  it("refuses an unauthenticated caller before looking at the body", async () => {
    const res = await t.request("POST", "/resource_providers", { token: null, body: bigBody() });
    expect(res.status).toBe(401);
  });
});

describe("hostile auth headers", () => {
  it.each([
    ["an empty token", { "x-auth-token": "" }, 401],
    ["a token of colons", { "x-auth-token": ":::" }, 403],
    ["a huge roles header", { "x-auth-token": "u", "x-roles": "admin,".repeat(5000) }, 200],
    ["a role list of blanks", { "x-auth-token": "u", "x-roles": " , ,, " }, 403],
    ["an unknown system scope", { "x-auth-token": "admin", "openstack-system-scope": "domain" }, 403],
  ])("%s gets a clean %s", async (_name, headers, status) => {
    const res = await t.app.request("/resource_providers", { headers: { accept: "application/json", ...headers } });
    expect(res.status).toBe(status);
  });
});
