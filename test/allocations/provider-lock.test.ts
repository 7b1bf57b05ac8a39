/**
 * A write waits for the providers it names while another transaction holds
 * and changes them (a concurrent claim bumping their generation), and must
 * still find them once that transaction commits: PostgreSQL rechecks a row
 * it waited for against the row's new version, and a lock statement whose
 * recheck runs through a join could drop the row there, answering "provider
 * does not exist" for a provider that exists.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, overcommitted, PROJECT, untilSomeoneWaitsOnALock, USER, type Provider } from "./fixtures.js";

let t: Harness;
beforeAll(async () => void (t = await startHarness()));
afterAll(async () => t?.close());

/** `request` sent while a raw session holds `held` locked and updates it; the session commits once the request waits. */
async function whileUpdatedUnderLock<T>(held: Provider[], request: () => Promise<T>): Promise<T> {
  const other = new pg.Client({ connectionString: t.url });
  await other.connect();
  try {
    await other.query("BEGIN");
    const ids = held.map((p) => p.id);
    await other.query("SELECT 1 FROM resource_providers WHERE id = ANY($1::int[]) ORDER BY id FOR NO KEY UPDATE", [ids]);
    await other.query("UPDATE resource_providers SET generation = generation + 1 WHERE id = ANY($1::int[])", [ids]);
    const response = request();
    await untilSomeoneWaitsOnALock(other);
    await other.query("COMMIT");
    return await response;
  } finally {
    await other.end();
  }
}

const put = (consumer: string, providers: Provider[]) =>
  t.request("PUT", `/allocations/${consumer}`, {
    body: {
      allocations: Object.fromEntries(providers.map((p) => [p.uuid, { resources: { VCPU: 1 } }])),
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: null,
      consumer_type: "INSTANCE",
    },
  });

describe("a write waiting for providers another transaction changed", () => {
  it("finds them once it gets the locks, one provider or several", async () => {
    for (const count of [1, 2, 3]) {
      const providers: Provider[] = [];
      for (let i = 0; i < count; i++) providers.push(await createProvider(t, { VCPU: { total: 8 } }));
      // Repeated, so the connection's prepared statement is past PostgreSQL's first custom plans.
      for (let round = 0; round < 7; round++) {
        const res = await whileUpdatedUnderLock(providers, () => put(newUuid(), providers));
        expect(res.status, JSON.stringify(res.body)).toBe(204);
      }
    }
    expect(await overcommitted(t)).toEqual([]);
  });

  it("finds the providers an emptied consumer held, too", async () => {
    const [a, b] = [await createProvider(t, { VCPU: { total: 8 } }), await createProvider(t, { VCPU: { total: 8 } })];
    for (let round = 0; round < 7; round++) {
      const consumer = newUuid();
      expect((await put(consumer, [a, b])).status).toBe(204);
      const { body } = await t.request("GET", `/allocations/${consumer}`);
      const res = await whileUpdatedUnderLock([a, b], () =>
        t.request("PUT", `/allocations/${consumer}`, {
          body: { allocations: {}, project_id: PROJECT, user_id: USER, consumer_generation: body.consumer_generation, consumer_type: "INSTANCE" },
        }),
      );
      expect(res.status, JSON.stringify(res.body)).toBe(204);
      expect((await t.request("GET", `/allocations/${consumer}`)).body.allocations).toEqual({});
    }
  });
});
