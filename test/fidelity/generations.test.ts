/**
 * docs/generations.md, checked: each row's write is performed here and the
 * generations it changed are compared with what the row says.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { generationOf, makeProvider, putInventories } from "../providers/support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

interface Row {
  id: string;
  provider: string;
  consumer: string;
}

const rows: Row[] = readFileSync(new URL("../../docs/generations.md", import.meta.url), "utf8")
  .split("\n")
  .map((line) => /^\| `([a-z0-9.-]+)` \|[^|]+\|([^|]*)\|([^|]*)\|/.exec(line))
  .filter((m): m is RegExpExecArray => m !== null)
  .map((m) => ({ id: m[1], provider: m[2].trim(), consumer: m[3].trim() }));

/** What a scenario saw: the provider's change (or the new provider's start and its parent's change), the consumer's. */
interface Seen {
  provider: number;
  newProvider?: number;
  consumer?: number | "gone" | "new 1";
  otherConsumer?: number | "new 1";
}

const owner = { project_id: "generations", user_id: "generations" };

async function consumerGeneration(consumer: string): Promise<number | null> {
  return (await t.request("GET", `/allocations/${consumer}`)).body.consumer_generation ?? null;
}

async function putAllocations(consumer: string, allocations: Record<string, Record<string, number>>) {
  const res = await t.request("PUT", `/allocations/${consumer}`, {
    version: "1.28",
    body: {
      allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
      ...owner,
      consumer_generation: await consumerGeneration(consumer),
    },
  });
  expect(res.status, res.text).toBe(204);
}

/** A provider with inventory, a consumer holding some of it, and the generations before the write. */
async function allocated() {
  const rp = await makeProvider(t);
  await putInventories(t, rp, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
  const consumer = newUuid();
  await putAllocations(consumer, { [rp]: { VCPU: 2 } });
  return { rp, consumer, before: await generationOf(t, rp), consumerBefore: (await consumerGeneration(consumer))! };
}

async function measure(rp: string, write: () => Promise<unknown>): Promise<number> {
  const before = await generationOf(t, rp);
  await write();
  return (await generationOf(t, rp)) - before;
}

async function ok(res: Promise<{ status: number; text: string }>) {
  const r = await res;
  expect(r.status, r.text).toBeLessThan(300);
}

const SCENARIOS: Record<string, () => Promise<Seen>> = {
  "create-child": async () => {
    const parent = await makeProvider(t);
    let child = "";
    const provider = await measure(parent, async () => {
      child = await makeProvider(t, { parent });
    });
    return { provider, newProvider: await generationOf(t, child) };
  },
  "update-provider": async () => {
    const parent = await makeProvider(t);
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => ok(t.request("PUT", `/resource_providers/${rp}`, { body: { name: `moved-${rp}`, parent_provider_uuid: parent } }))) };
  },
  "put-inventories": async () => {
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => putInventories(t, rp, { VCPU: { total: 4 } })) };
  },
  "post-inventory": async () => {
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => ok(t.request("POST", `/resource_providers/${rp}/inventories`, { body: { resource_class: "VCPU", total: 4 } }))) };
  },
  "put-inventory": async () => {
    const rp = await makeProvider(t);
    await putInventories(t, rp, { VCPU: { total: 4 } });
    const gen = await generationOf(t, rp);
    return { provider: await measure(rp, () => ok(t.request("PUT", `/resource_providers/${rp}/inventories/VCPU`, { body: { resource_provider_generation: gen, total: 5 } }))) };
  },
  "delete-inventory": async () => {
    const rp = await makeProvider(t);
    await putInventories(t, rp, { VCPU: { total: 4 } });
    return { provider: await measure(rp, () => ok(t.request("DELETE", `/resource_providers/${rp}/inventories/VCPU`))) };
  },
  "delete-inventories": async () => {
    const rp = await makeProvider(t);
    await putInventories(t, rp, { VCPU: { total: 4 } });
    return { provider: await measure(rp, () => ok(t.request("DELETE", `/resource_providers/${rp}/inventories`))) };
  },
  "traits-changed": async () => {
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => ok(t.request("PUT", `/resource_providers/${rp}/traits`, { body: { traits: ["HW_CPU_X86_SSE"], resource_provider_generation: 0 } }))) };
  },
  "traits-same": async () => {
    const rp = await makeProvider(t);
    await ok(t.request("PUT", `/resource_providers/${rp}/traits`, { body: { traits: ["HW_CPU_X86_SSE"], resource_provider_generation: 0 } }));
    return { provider: await measure(rp, () => ok(t.request("PUT", `/resource_providers/${rp}/traits`, { body: { traits: ["HW_CPU_X86_SSE"], resource_provider_generation: 1 } }))) };
  },
  "traits-delete-none": async () => {
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => ok(t.request("DELETE", `/resource_providers/${rp}/traits`))) };
  },
  "aggregates-1.19": async () => {
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => ok(t.request("PUT", `/resource_providers/${rp}/aggregates`, { version: "1.19", body: { aggregates: [], resource_provider_generation: 0 } }))) };
  },
  "aggregates-1.1": async () => {
    const rp = await makeProvider(t);
    return { provider: await measure(rp, () => ok(t.request("PUT", `/resource_providers/${rp}/aggregates`, { version: "1.1", body: [newUuid()] }))) };
  },
  "put-allocations": async () => {
    const { rp, consumer, consumerBefore } = await allocated();
    const provider = await measure(rp, () => putAllocations(consumer, { [rp]: { VCPU: 3 } }));
    return { provider, consumer: (await consumerGeneration(consumer))! - consumerBefore };
  },
  "put-allocations-new": async () => {
    const { rp } = await allocated();
    const consumer = newUuid();
    const provider = await measure(rp, () => putAllocations(consumer, { [rp]: { VCPU: 1 } }));
    return { provider, consumer: (await consumerGeneration(consumer)) === 1 ? "new 1" : -1 };
  },
  "put-allocations-dropped": async () => {
    const { rp, consumer, consumerBefore } = await allocated();
    const other = await makeProvider(t);
    await putInventories(t, other, { VCPU: { total: 8 } });
    const provider = await measure(rp, () => putAllocations(consumer, { [other]: { VCPU: 1 } }));
    return { provider, consumer: (await consumerGeneration(consumer))! - consumerBefore };
  },
  "put-allocations-empty": async () => {
    const { rp, consumer } = await allocated();
    const provider = await measure(rp, () => putAllocations(consumer, {}));
    const [row] = await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [consumer]);
    return { provider, consumer: row ? -1 : "gone" };
  },
  "post-allocations": async () => {
    const { rp, consumer, consumerBefore } = await allocated();
    const migration = newUuid();
    const provider = await measure(rp, () =>
      ok(
        t.request("POST", "/allocations", {
          version: "1.28",
          body: {
            [consumer]: { allocations: { [rp]: { resources: { DISK_GB: 10 } } }, ...owner, consumer_generation: consumerBefore },
            [migration]: { allocations: { [rp]: { resources: { VCPU: 2 } } }, ...owner, consumer_generation: null },
          },
        }),
      ),
    );
    return {
      provider,
      consumer: (await consumerGeneration(consumer))! - consumerBefore,
      otherConsumer: (await consumerGeneration(migration)) === 1 ? "new 1" : -1,
    };
  },
  "delete-allocations": async () => {
    const { rp, consumer } = await allocated();
    const provider = await measure(rp, () => ok(t.request("DELETE", `/allocations/${consumer}`)));
    const [row] = await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [consumer]);
    return { provider, consumer: row ? -1 : "gone" };
  },
  reshape: async () => {
    const { rp, consumer, consumerBefore } = await allocated();
    const child = await makeProvider(t, { parent: rp });
    const [parentBefore, childBefore] = [await generationOf(t, rp), await generationOf(t, child)];
    const res = await t.request("POST", "/reshaper", {
      version: "1.30",
      body: {
        inventories: {
          [rp]: { resource_provider_generation: parentBefore, inventories: { DISK_GB: { total: 100 } } },
          [child]: { resource_provider_generation: childBefore, inventories: { VCPU: { total: 8 } } },
        },
        allocations: { [consumer]: { allocations: { [child]: { resources: { VCPU: 2 } } }, ...owner, consumer_generation: consumerBefore } },
      },
    });
    expect(res.status, res.text).toBe(204);
    // The parent is in the inventories only; the child in both: each must show the row's count.
    const parent = (await generationOf(t, rp)) - parentBefore;
    const childDelta = (await generationOf(t, child)) - childBefore;
    return { provider: childDelta === 3 && parent === 2 ? 3 : -1, consumer: (await consumerGeneration(consumer))! - consumerBefore };
  },
};

describe("docs/generations.md", () => {
  it("has a scenario for every row and a row for every scenario", () => {
    expect(rows.map((r) => r.id).sort()).toEqual(Object.keys(SCENARIOS).sort());
  });

  for (const row of rows) {
    it(`${row.id}: provider ${row.provider || "-"}, consumer ${row.consumer || "-"}`, async () => {
      const seen = await SCENARIOS[row.id]();
      if (/starts at 0/.test(row.provider)) {
        expect(seen.newProvider).toBe(0);
        expect(seen.provider).toBe(Number(/the parent \+(\d)/.exec(row.provider)![1]));
      } else {
        expect(seen.provider).toBe(Number(/\+(\d)/.exec(row.provider)![1]));
      }
      if (row.consumer === "gone") expect(seen.consumer).toBe("gone");
      else if (row.consumer === "new: 1") expect(seen.consumer).toBe("new 1");
      else if (row.consumer) {
        expect(seen.consumer).toBe(Number(/\+(\d)/.exec(row.consumer)![1]));
        if (/new: 1/.test(row.consumer)) expect(seen.otherConsumer).toBe("new 1");
      }
    });
  }
});
