/**
 * whenSent, on which giving a body's buffers back rests: it runs only once
 * every byte has left the process, so a client that stops reading holds it
 * off, and never without a socket.
 */
import net from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/http/context.js";
import { whenSent } from "../../src/http/node-bindings.js";
import { freePort } from "../../src/net.js";

/** More than the kernel takes for a client that does not read. */
const BODY_BYTES = 32 * 1024 * 1024;
const sent: string[] = [];
const app = new Hono<AppEnv>();
app.get("/body/:name", (c) => {
  whenSent(c, () => sent.push(c.req.param("name")));
  return c.body(Buffer.alloc(BODY_BYTES, 120), 200, { "content-type": "application/octet-stream" });
});

let server: ServerType;
let port: number;
beforeAll(async () => {
  port = await freePort();
  server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" });
  await new Promise((r) => server.once("listening", r));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("whenSent", () => {
  it("waits for a client that stops reading, and runs once the last byte has left", async () => {
    const socket = net.connect(port, "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    socket.write("GET /body/slow HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
    await sleep(500);
    expect(sent).not.toContain("slow");

    let received = 0;
    socket.on("data", (chunk: Buffer) => (received += chunk.length));
    await new Promise((r) => socket.once("end", r));
    expect(received).toBeGreaterThan(BODY_BYTES);
    for (let i = 0; i < 100 && !sent.includes("slow"); i++) await sleep(10);
    expect(sent).toContain("slow");
  });

  it("does not run without a socket (app.request)", async () => {
    const res = await app.request("/body/direct");
    expect((await res.arrayBuffer()).byteLength).toBe(BODY_BYTES);
    await sleep(50);
    expect(sent).not.toContain("direct");
  });
});
