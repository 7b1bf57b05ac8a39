/**
 * The app owns the change feed's notifier (createApp), and its close() gives
 * back the LISTEN connection a long poll holds, so the pool can end with no
 * connection left checked out; a poll still waiting then finishes by
 * polling.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { createLogger } from "../../src/log.js";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t?.close());

/** Connections of this database whose last statement was LISTEN: the notifier's, while it listens. */
const listening = async () =>
  Number((await t.sql("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"))[0].n);

const checkedOut = () => t.database.pool.totalCount - t.database.pool.idleCount;

describe("createApp's close()", () => {
  it("releases the connection a waiting long poll listens on", async () => {
    const placement = await createApp({ db: t.database.db, config: t.config, log: createLogger("silent") });
    const headers = { "x-auth-token": "admin", accept: "application/json", "openstack-api-version": "placement latest" };
    const next = (await (await placement.app.request("/changes", { headers })).json()).next;
    const poll = placement.app.request(`/changes?since=${next}&timeout=2`, { headers });
    for (let i = 0; i < 100 && (await listening()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await listening()).toBe(1);

    await placement.close();
    expect(await listening()).toBe(0);
    const res = await poll;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ changes: [], next });
    expect(checkedOut()).toBe(0);
  });
});
