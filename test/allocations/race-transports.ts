/**
 * The two ways the race tests send their requests: through the in-process
 * app (one pool of real connections), and to two separate server processes
 * on the same database, alternating between them, so correctness cannot rest
 * on anything shared in memory. The second needs `npm run build` (it starts
 * dist/src/cli.js).
 */
import { afterAll, beforeAll } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

export interface Reply {
  status: number;
  body: any;
}
export type Send = (method: string, path: string, body?: unknown, version?: string) => Promise<Reply>;

export const TRANSPORTS = ["one process", "two processes"] as const;
export type TransportName = (typeof TRANSPORTS)[number];

export interface RaceTransports {
  send: Record<TransportName, Send>;
  stop(): Promise<void>;
}

/** Both transports over the harness's database; each server process gets half of `clients` connections. */
export async function startRaceTransports(t: Harness, clients: number): Promise<RaceTransports> {
  const env = { DATABASE_URL: t.url, LOG_LEVEL: "warn", PLACEMENT_DB_POOL_SIZE: String(clients / 2) };
  const servers: ServerProcess[] = await Promise.all([startServerProcess(env, 60_000), startServerProcess(env, 60_000)]);
  let next = 0;
  return {
    send: {
      "one process": async (method, path, body, version = "1.39") => {
        const res = await t.request(method, path, { body, version });
        return { status: res.status, body: res.body };
      },
      "two processes": async (method, path, body, version = "1.39") => {
        const server = servers[next++ % servers.length];
        const res = await fetch(`${server.baseUrl}${path}`, {
          method,
          headers: {
            "x-auth-token": "admin",
            accept: "application/json",
            "openstack-api-version": `placement ${version}`,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      },
    },
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

/**
 * For a race test file: a harness whose pool has `clients` connections and
 * both transports over its database, started before the file's tests and
 * stopped after them. Read them inside tests (or later hooks), not before.
 */
export function useRaceHarness(clients: number): { harness(): Harness; send(mode: TransportName): Send } {
  let t: Harness | undefined;
  let transports: RaceTransports | undefined;
  beforeAll(async () => {
    t = await startHarness({ poolSize: clients });
    transports = await startRaceTransports(t, clients);
  }, 120_000);
  afterAll(async () => {
    await transports?.stop();
    await t?.close();
  });
  return { harness: () => t!, send: (mode) => transports!.send[mode] };
}

export const count = (replies: Reply[], status: number) => replies.filter((r) => r.status === status).length;
export const details = (replies: Reply[]) => replies.filter((r) => r.status >= 400).map((r) => r.body?.errors?.[0]?.detail as string);
