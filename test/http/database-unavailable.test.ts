/** When the database cannot be reached the client gets a 503 to retry on, in Placement's error format, never a 500. */
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { testConfig } from "../../src/config.js";
import { openDatabase } from "../../src/db/database.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../../src/net.js";

const log = createLogger("silent");
const database = openDatabase(`postgresql://postgres@127.0.0.1:${await freePort()}/nowhere`, 2, log);
const { app, close } = await createApp({ db: database.db, config: testConfig(), log });
afterAll(async () => {
  await close();
  await database.close();
});

describe("database unavailable", () => {
  it("answers 503 with the error body and no internals", async () => {
    const res = await app.request("/resource_providers", {
      headers: { "x-auth-token": "admin", accept: "application/json", "openstack-api-version": "placement 1.39" },
    });
    expect(res.status).toBe(503);
    const body = await res.json();
    expect(body.errors[0]).toMatchObject({ status: 503, title: "Service Unavailable", code: "placement.undefined_code" });
    expect(body.errors[0].detail).toContain("retry later");
    expect(body.errors[0].detail).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|nowhere|\n\s+at /);
  });
});
