/**
 * Slowloris: a client that trickles its headers, or its body, is cut off at
 * the configured timeout with a 408 in Placement's format, while everyone
 * else is served; what it half sent is never applied.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";
import { expectTableInvariants, ownSql } from "./support.js";

let db: TestDatabase;
let server: ServerProcess;
beforeAll(async () => {
  db = await createTestDatabase();
  server = await startServerProcess({
    DATABASE_URL: db.url,
    PLACEMENT_HEADERS_TIMEOUT_MS: "1000",
    PLACEMENT_REQUEST_TIMEOUT_MS: "2000",
  });
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

/**
 * Sends `head` at once, then `trickle` a byte every 100 ms, until the server
 * closes the connection; resolves with what it answered. Gives up (rejects)
 * after `giveUpMs`, far past the server's bound.
 */
function trickle(head: string, trickle: string, giveUpMs = 15_000): Promise<string> {
  const { port } = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    let answer = "";
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still connected after ${giveUpMs} ms; got ${JSON.stringify(answer)}`));
    }, giveUpMs);
    socket.on("connect", () => {
      socket.write(head);
      timer = setInterval(() => {
        if (!socket.writable) return;
        socket.write(trickle[sent++ % trickle.length]);
      }, 100);
    });
    socket.on("data", (d) => (answer += d));
    socket.on("error", () => undefined); // a reset after the answer is the server closing
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve(answer);
    });
  });
}

function expectRequestTimeout(answer: string) {
  expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
  expect(body.errors[0]).toMatchObject({ status: 408, title: "Request Timeout" });
}

const providerCount = async () => (await ownSql(db.url)("SELECT count(*)::int AS n FROM resource_providers"))[0].n as number;

describe("slow clients", () => {
  it("cuts off a client that trickles its headers, and serves others meanwhile", async () => {
    const slow = trickle("GET /resource_providers HTTP/1.1\r\nHost: placement\r\nx-auth-token: admin\r\nX-Padding: ", "abcdefgh");
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${server.baseUrl}/`)).status).toBe(200);
    expectRequestTimeout(await slow);
  });

  it("cuts off a client that trickles its body, and applies none of it", async () => {
    const before = await providerCount();
    const body = JSON.stringify({ name: `never-finished-${"x".repeat(200)}` });
    const head =
      "POST /resource_providers HTTP/1.1\r\nHost: placement\r\nx-auth-token: admin\r\n" +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
    expectRequestTimeout(await trickle(head, body));
    expect(await providerCount()).toBe(before);
    expect((await fetch(`${server.baseUrl}/resource_providers`, { headers: { "x-auth-token": "admin" } })).status).toBe(200);
    await expectTableInvariants(db.url);
    expect(server.output()).not.toMatch(/unhandled error/);
  });
});
