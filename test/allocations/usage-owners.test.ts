/**
 * allocations.project_id, user_id and consumer_type_id, copies of their
 * consumer's that triggers keep (drizzle/0013) and GET /usages sums by: after
 * writes through the API, a consumer moved to another project or type, and
 * an operator's own SQL, every copy equals its consumer's (ownerDrift), and
 * GET /usages counts each allocation under its consumer's current owner.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, ownerDrift, type Provider } from "./fixtures.js";

let t: Harness;
let host: Provider;
beforeAll(async () => {
  t = await startHarness();
  host = await createProvider(t, { VCPU: { total: 64 }, MEMORY_MB: { total: 65536 } });
});
afterAll(async () => t.close());

async function put(consumer: string, resources: Record<string, number>, owner: { project: string; user: string; type?: string }, generation: number | null) {
  // Without a type, before 1.38: the consumer has none (consumer_type_id NULL).
  const res = await t.request("PUT", `/allocations/${consumer}`, {
    version: owner.type ? "1.38" : "1.37",
    body: {
      allocations: { [host.uuid]: { resources } },
      project_id: owner.project,
      user_id: owner.user,
      consumer_generation: generation,
      ...(owner.type ? { consumer_type: owner.type } : {}),
    },
  });
  expect(res.status, res.text).toBe(204);
}

async function usages(query: string, version = "1.9"): Promise<unknown> {
  const res = await t.request("GET", `/usages?${query}`, { version });
  expect(res.status, res.text).toBe(200);
  return (res.body as { usages: unknown }).usages;
}

describe("the consumer's owner on its allocations", () => {
  it("is copied as allocations are written, and GET /usages sums by it, per project, user and type", async () => {
    const [p1, p2, u1, u2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await put(newUuid(), { VCPU: 1, MEMORY_MB: 512 }, { project: p1, user: u1, type: "INSTANCE" }, null);
    await put(newUuid(), { VCPU: 2 }, { project: p1, user: u2, type: "MIGRATION" }, null);
    await put(newUuid(), { VCPU: 4, MEMORY_MB: 1024 }, { project: p2, user: u1, type: "INSTANCE" }, null);
    expect(await ownerDrift(t)).toEqual([]);
    expect(await usages(`project_id=${p1}`)).toEqual({ VCPU: 3, MEMORY_MB: 512 });
    expect(await usages(`project_id=${p1}&user_id=${u2}`)).toEqual({ VCPU: 2 });
    expect(await usages(`project_id=${p2}&user_id=${u2}`)).toEqual({});
    expect(await usages(`project_id=${p1}`, "1.38")).toEqual({
      INSTANCE: { VCPU: 1, MEMORY_MB: 512, consumer_count: 1 },
      MIGRATION: { VCPU: 2, consumer_count: 1 },
    });
    expect(await usages(`project_id=${p1}&consumer_type=all`, "1.38")).toEqual({ all: { VCPU: 3, MEMORY_MB: 512, consumer_count: 2 } });
  });

  it("follows a consumer rewritten under another project and type", async () => {
    const [p1, p2, user] = [randomUUID(), randomUUID(), randomUUID()];
    const consumer = newUuid();
    await put(consumer, { VCPU: 3 }, { project: p1, user, type: "INSTANCE" }, null);
    await put(consumer, { VCPU: 3 }, { project: p2, user, type: "MIGRATION" }, 1);
    expect(await ownerDrift(t)).toEqual([]);
    expect(await usages(`project_id=${p1}`)).toEqual({});
    expect(await usages(`project_id=${p2}`, "1.38")).toEqual({ MIGRATION: { VCPU: 3, consumer_count: 1 } });
  });

  it("follows an operator's SQL: a consumer moved to another project, an allocation inserted without the copies", async () => {
    const [p1, p2, user] = [randomUUID(), randomUUID(), randomUUID()];
    const consumer = newUuid();
    await put(consumer, { VCPU: 5 }, { project: p1, user }, null);
    await t.sql("INSERT INTO projects (external_id) VALUES ($1)", [p2]);
    await t.sql("UPDATE consumers SET project_id = (SELECT id FROM projects WHERE external_id = $1) WHERE uuid = $2", [p2, consumer]);
    await t.sql(
      `INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
       SELECT c.id, $2, rc.id, 256 FROM consumers c, resource_classes rc WHERE c.uuid = $1 AND rc.name = 'MEMORY_MB'`,
      [consumer, host.id],
    );
    expect(await ownerDrift(t)).toEqual([]);
    expect(await usages(`project_id=${p1}`)).toEqual({});
    expect(await usages(`project_id=${p2}`)).toEqual({ VCPU: 5, MEMORY_MB: 256 });
  });
});
