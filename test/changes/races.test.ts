/**
 * The change feed while writers race: readers following it by long poll see
 * every committed change exactly once and in commit order (their incremental
 * reads equal one read of the whole feed afterwards, with cursors strictly
 * increasing and each provider's generation never going back), and a host
 * map built from the feed equals the tables after the run. Writers go
 * through the in-process app and a separate server process on the same
 * database (dist/, built by the global setup), so sequencing cannot rest on
 * anything one process holds.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";
import { apply, tablesState, type FeedChange, type HostMap } from "./support.js";

const WRITERS = 12;
const ROUNDS = 15;

let t: Harness;
let server: ServerProcess;
beforeAll(async () => {
  t = await startHarness({ poolSize: WRITERS + 8 });
  server = await startServerProcess({ DATABASE_URL: t.url, LOG_LEVEL: "warn", PLACEMENT_DB_POOL_SIZE: String(WRITERS) }, 60_000);
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await t?.close();
});

type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;
const inProcess: Send = async (method, path, body) => {
  const res = await t.request(method, path, { body });
  return { status: res.status, body: res.body };
};
const overHttp: Send = async (method, path, body) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { "x-auth-token": "admin", accept: "application/json", "openstack-api-version": "placement latest", "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

async function follow(from: number, stop: () => boolean): Promise<FeedChange[]> {
  const seen: FeedChange[] = [];
  let cursor = from;
  for (;;) {
    const done = stop();
    const res = await inProcess("GET", `/changes?since=${cursor}&timeout=${done ? 0 : 2}`);
    expect(res.status).toBe(200);
    seen.push(...res.body.changes);
    cursor = res.body.next;
    if (done && res.body.changes.length === 0) return seen;
  }
}

it("readers see every change once, in commit order, and a host map built from the feed equals the tables", async () => {
  const start = (await inProcess("GET", "/changes")).body.next as number;
  const providers: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await inProcess("POST", "/resource_providers", { name: `race-${newUuid()}` });
    providers.push(res.body.uuid);
    await inProcess("PUT", `/resource_providers/${res.body.uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 64 }, MEMORY_MB: { total: 65536 } },
    });
  }
  await inProcess("PUT", "/traits/CUSTOM_FEED_RACE");
  let writing = true;
  const readers = [follow(start, () => !writing), follow(start, () => !writing)];

  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const send = w % 2 ? overHttp : inProcess;
      const mine: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const rp = providers[(w + round) % providers.length];
        const op = (w + round) % 5;
        let res: { status: number; body: any };
        if (op === 0 || op === 1) {
          const consumer = newUuid();
          res = await send("PUT", `/allocations/${consumer}`, {
            allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 256 } } },
            project_id: "p",
            user_id: "u",
            consumer_generation: null,
            consumer_type: "INSTANCE",
          });
          if (res.status === 204) mine.push(consumer);
        } else if (op === 2 && mine.length > 0) {
          res = await send("DELETE", `/allocations/${mine.shift()}`);
        } else if (op === 2) {
          res = await send("POST", "/claims?resources=VCPU:2", { consumers: [{ consumer_uuid: newUuid(), project_id: "p", user_id: "u" }], pick: "spread" });
        } else {
          const current = await send("GET", `/resource_providers/${rp}`);
          const generation = current.body.generation;
          res =
            op === 3
              ? await send("PUT", `/resource_providers/${rp}/traits`, { resource_provider_generation: generation, traits: round % 2 ? ["CUSTOM_FEED_RACE"] : [] })
              : await send("PUT", `/resource_providers/${rp}/aggregates`, { resource_provider_generation: generation, aggregates: [newUuid()] });
        }
        statuses.push(res.status);
      }
    }),
  );
  writing = false;
  const [one, two] = await Promise.all(readers);

  // Writes either succeed or meet a real conflict (a generation another writer moved); never an error.
  expect(statuses.filter((s) => s >= 500 || (s >= 400 && s !== 409))).toEqual([]);
  // The whole feed, read once after the run: what each reader saw bit by bit must be exactly this.
  const whole = (await inProcess("GET", `/changes?since=${start}&limit=10000`)).body.changes as FeedChange[];
  expect(whole.length).toBeGreaterThan(WRITERS * ROUNDS / 2);
  expect(one).toEqual(whole);
  expect(two).toEqual(whole);
  const keys = whole.map((c) => `${c.cursor}/${c.resource_provider_uuid}`);
  expect(new Set(keys).size).toBe(keys.length);
  // Commit order: cursors never go back, and neither does any provider's generation.
  const last = new Map<string, number>();
  for (let i = 1; i < whole.length; i++) expect(whole[i].cursor).toBeGreaterThanOrEqual(whole[i - 1].cursor);
  for (const c of whole) {
    expect(c.generation as number).toBeGreaterThanOrEqual(last.get(c.resource_provider_uuid) ?? 0);
    last.set(c.resource_provider_uuid, c.generation as number);
  }
  const host: HostMap = new Map();
  for (const c of one) apply(host, c);
  expect(host).toEqual(await tablesState(t));
});
