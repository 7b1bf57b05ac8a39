/**
 * HTTP behaviour every route shares: content negotiation, body checks, 404 and
 * 405 rules, error format and rendering, request ids, CORS on and off, and the
 * parser-level 400 for a non-numeric Content-Length (through a real socket).
 */
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerParserErrors } from "../../src/http/client-error.js";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
let cors: Harness;
beforeAll(async () => {
  [t, cors] = await Promise.all([
    startHarness(),
    startHarness({ config: { PLACEMENT_CORS_ALLOWED_ORIGINS: ["http://valid.example.com"], PLACEMENT_CORS_ALLOW_HEADERS: ["openstack-api-version"] } }),
  ]);
});
afterAll(async () => Promise.all([t.close(), cors.close()]));

describe("content negotiation", () => {
  it("answers 406 when Accept rules out JSON on a GET route", async () => {
    const res = await t.request("GET", "/resource_classes", { headers: { accept: "text/plain" } });
    expect(res.status).toBe(406);
    expect(res.text).toContain("Only application/json is provided");
  });

  it("lets a GET that answers no body ignore Accept", async () => {
    const res = await t.request("GET", "/traits/HW_CPU_X86_SSE", { headers: { accept: "text/plain" } });
    expect(res.status).toBe(204);
  });

  it("accepts a browser's Accept with */*", async () => {
    const res = await t.request("GET", "/resource_classes", { headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" } });
    expect(res.status).toBe(200);
    expect(res.body.resource_classes.length).toBeGreaterThan(0);
  });

  it("says 404 rather than 406 for a path that does not exist", async () => {
    const res = await t.request("GET", "/barnabas", { headers: { accept: "text/html" } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    expect(res.text).toContain("The resource could not be found");
  });

  it("renders errors as plain text when neither JSON nor HTML is acceptable", async () => {
    const res = await t.request("GET", "/barnabas", { headers: { accept: "text/plain" } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(res.text).toMatch(/^404 Not Found\n\nThe resource could not be found\./);
    const invalid = await t.request("POST", "/resource_classes", { body: { name: "FOO" }, headers: { accept: "text/plain" } });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toContain("JSON does not validate");
  });

  it("renders errors as JSON for no Accept and for */*", async () => {
    for (const accept of [undefined, "*/*"]) {
      const res = await t.app.request("/barnabas", { headers: { "x-auth-token": "admin", ...(accept ? { accept } : {}) } });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      expect((await res.json()).errors[0]).toMatchObject({ status: 404, title: "Not Found" });
    }
  });
});

describe("request bodies", () => {
  it("answers 415 for a body that is not JSON, naming the media type", async () => {
    const res = await t.request("POST", "/resource_classes", { body: "name", headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(415);
    expect(res.body.errors[0].detail).toContain("The media type text/plain is not supported, use application/json");
  });

  it("answers 415 naming None when a PUT has neither body nor content type", async () => {
    const res = await t.request("PUT", "/resource_classes/CUSTOM_X", { version: "1.6" });
    expect(res.status).toBe(415);
    expect(res.body.errors[0].detail).toContain("The media type None is not supported, use application/json");
  });

  it("answers 400 for a body without a content type", async () => {
    const res = await t.app.request("/resource_classes", {
      method: "POST",
      headers: { "x-auth-token": "admin", "content-length": "4" },
      body: new TextEncoder().encode("abcd"),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].detail).toContain("content-type header required when content-length > 0");
  });

  it("answers 400 for malformed JSON", async () => {
    const res = await t.request("POST", "/resource_classes", { body: '{"name": ' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].detail).toContain("Malformed JSON:");
  });
});

describe("routing", () => {
  it("answers 405 with Allow and Placement's wording for a method a path does not serve", async () => {
    const res = await t.request("DELETE", "/resource_classes");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
    expect(res.body.errors[0].title).toBe("Method Not Allowed");
    expect(res.body.errors[0].detail).toContain("The method DELETE is not allowed for this resource.");
  });

  it("does not serve HEAD (Placement answers it 405)", async () => {
    const res = await t.request("HEAD", "/resource_classes");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
  });

  it("answers OPTIONS with 405 when CORS is off", async () => {
    const res = await t.request("OPTIONS", "/", { headers: { origin: "http://valid.example.com", "access-control-request-method": "GET" } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("gives a path under an existing resource that does not exist a 404", async () => {
    const res = await t.request("GET", "/resource_providers/7850178f-1807-4512-b135-0b174985405b/cows");
    expect(res.status).toBe(404);
    expect(res.body.errors[0].detail).toContain("The resource could not be found.");
  });

  it("decodes unicode path segments", async () => {
    const res = await t.request("GET", "/resource_classes/%E2%98%83");
    expect(res.status).toBe(404);
    expect(res.body.errors[0].detail).toContain("No such resource class ☃.");
  });
});

describe("values the database cannot store", () => {
  it("answers a NUL character in a path or a body with a 400, not a 500", async () => {
    const inPath = await t.request("GET", "/resource_classes/CUSTOM_%00");
    expect(inPath.status).toBe(400);
    expect(inPath.body.errors[0].detail).toContain("cannot be stored");
    const inBody = await t.request("POST", "/resource_providers", { body: { name: "nul\u0000name" } });
    expect(inBody.status).toBe(400);
    expect(await t.sql("SELECT 1 FROM resource_providers WHERE name LIKE 'nul%'")).toHaveLength(0);
  });
});

describe("errors and request ids", () => {
  it("puts the request id in the header and the error, and the code from 1.23", async () => {
    const old = await t.request("GET", "/barnabas", { version: "1.22" });
    expect(old.body.errors[0].code).toBeUndefined();
    const res = await t.request("GET", "/barnabas", { version: "1.23" });
    const id = res.headers.get("x-openstack-request-id");
    expect(id).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(res.body.errors[0]).toEqual({
      status: 404,
      title: "Not Found",
      detail: expect.stringContaining("The resource could not be found."),
      code: "placement.undefined_code",
      request_id: id,
    });
    expect(res.headers.get("openstack-api-version")).toBe("placement 1.23");
  });

  it("names the supported range on a microversion 406, and echoes no version on it", async () => {
    const res = await t.request("GET", "/resource_providers", { version: "0.9" });
    expect(res.status).toBe(406);
    expect(res.body.errors[0]).toMatchObject({ max_version: "1.39", min_version: "1.0" });
    expect(res.body.errors[0].detail).toContain("Invalid microversion: Unacceptable version header: 0.9");
    expect(res.headers.get("openstack-api-version")).toBeNull();
    const accept = await t.request("GET", "/resource_providers", { headers: { accept: "text/plain" } });
    expect(accept.status).toBe(406);
    expect(accept.text).toContain("Only application/json is provided");
    expect(accept.text).not.toContain("max_version");
  });

  it("gives every request its own id", async () => {
    const [a, b] = await Promise.all([t.request("GET", "/"), t.request("GET", "/")]);
    expect(a.headers.get("x-openstack-request-id")).not.toBe(b.headers.get("x-openstack-request-id"));
  });

  it("sends cache headers on / from 1.15 only", async () => {
    expect((await t.request("GET", "/", { version: "1.15" })).headers.get("cache-control")).toBe("no-cache");
    expect((await t.request("GET", "/", { version: "1.14" })).headers.get("last-modified")).toBeNull();
  });
});

describe("CORS when configured", () => {
  it("answers a valid preflight with 200 and the allow headers", async () => {
    const res = await cors.request("OPTIONS", "/", {
      token: null,
      headers: { origin: "http://valid.example.com", "access-control-request-method": "GET", "access-control-request-headers": "openstack-api-version" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://valid.example.com");
    expect(res.headers.get("access-control-allow-headers")).toBe("openstack-api-version");
    expect(res.headers.get("access-control-allow-methods")).toBe("GET");
  });

  it("answers a preflight from another origin, or asking for other headers, without allowing it", async () => {
    const other = await cors.request("OPTIONS", "/", { headers: { origin: "http://invalid.example.com", "access-control-request-method": "GET" } });
    expect(other.status).toBe(200);
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const headers = await cors.request("OPTIONS", "/", {
      headers: { origin: "http://valid.example.com", "access-control-request-method": "GET", "access-control-request-headers": "x-secret" },
    });
    expect(headers.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("marks actual responses for the allowed origin only", async () => {
    const ok = await cors.request("GET", "/", { headers: { origin: "http://valid.example.com" } });
    expect(ok.headers.get("access-control-allow-origin")).toBe("http://valid.example.com");
    expect(ok.headers.get("vary")).toContain("Origin");
    const denied = await cors.request("GET", "/", { headers: { origin: "http://invalid.example.com" } });
    expect(denied.status).toBe(200);
    expect(denied.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("marks error responses too", async () => {
    const res = await cors.request("GET", "/barnabas", { headers: { origin: "http://valid.example.com" } });
    expect(res.status).toBe(404);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://valid.example.com");
  });
});

describe("requests Node's parser rejects", () => {
  let server: Server;
  beforeAll(async () => {
    server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: t.app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s as Server));
    });
    answerParserErrors(server);
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect((server.address() as AddressInfo).port, "127.0.0.1", () => socket.write(request));
      let data = "";
      socket.on("data", (chunk) => (data += chunk.toString()));
      socket.on("end", () => resolve(data));
      socket.on("error", reject);
    });

  it("answers a non-numeric Content-Length with Placement's JSON 400", async () => {
    const response = await raw(
      "POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\ncontent-type: application/json\r\ncontent-length: hi mom\r\n\r\n{}",
    );
    expect(response).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(response).toMatch(/content-type: application\/json/i);
    const body = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));
    expect(body.errors[0]).toMatchObject({ status: 400, title: "Bad Request" });
    expect(body.errors[0].detail).toContain("content-length header must be an integer");
  });
});
