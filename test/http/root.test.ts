import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

describe("GET /", () => {
  it("answers the version document without authentication", async () => {
    const res = await t.request("GET", "/", { token: null, version: null });
    expect(res.status).toBe(200);
    expect(res.body.versions[0]).toMatchObject({ id: "v1.0", min_version: "1.0", max_version: "1.39", status: "CURRENT" });
    expect(res.headers.get("openstack-api-version")).toBe("placement 1.0");
    expect(res.headers.get("vary")).toBe("openstack-api-version");
    expect(res.headers.get("x-openstack-request-id")).toMatch(/^req-[0-9a-f-]{36}$/);
  });

  it("negotiates latest and rejects versions out of range or malformed", async () => {
    expect((await t.request("GET", "/", { version: "latest" })).headers.get("openstack-api-version")).toBe("placement 1.39");
    const tooNew = await t.request("GET", "/", { version: "1.40" });
    expect(tooNew.status).toBe(406);
    expect(tooNew.body.errors[0].detail).toContain("Unacceptable version header: 1.40");
    expect((await t.request("GET", "/", { version: "LATEST" })).status).toBe(400);
    const malformed = await t.request("GET", "/", { version: "pony.horse" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].detail).toContain("invalid version string: pony.horse");
  });

  it("answers 405 with Allow for other methods, with the error format", async () => {
    const res = await t.request("DELETE", "/", { version: "1.23" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
    expect(res.body.errors[0]).toMatchObject({ status: 405, title: "Method Not Allowed", code: "placement.undefined_code" });
    expect(res.body.errors[0].request_id).toBe(res.headers.get("x-openstack-request-id"));
  });

  it("keeps a well-formed inbound request id", async () => {
    const id = "req-11111111-2222-3333-4444-555555555555";
    const res = await t.request("GET", "/", { headers: { "x-openstack-request-id": id } });
    expect(res.headers.get("x-openstack-request-id")).toBe(id);
  });

  it("requires a token everywhere but the root", async () => {
    const res = await t.request("GET", "/resource_providers", { token: null });
    expect(res.status).toBe(401);
  });
});
