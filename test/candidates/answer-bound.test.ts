/**
 * The tree view's upper bound on an answer's bytes
 * (src/services/candidates/answer-bound.ts), on the bench's nested cloud:
 * every tree answers and no inventory runs short, so the answer is all the
 * bound counts but for the merges it does not foresee, and the bound must be
 * close (it is what lets a large bounded answer leave before it is whole),
 * yet never short, for the requests and for the summaries alike. The
 * contract suite checks that it is never short over random clouds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { load } from "../../bench/candidates.js";
import { CountedBounds } from "../../src/services/candidates/answer-bound.js";
import { CandidatesService } from "../../src/services/candidates/service.js";
import { startHarness, type Harness } from "../support/harness.js";
import { alone, boundedAnswer } from "./data.js";

const NESTED = "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&resources_N1=SRIOV_NET_VF:1&resources_N2=SRIOV_NET_VF:1";
const UNSUFFIXED = "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10";

/**
 * Query, microversion, and how far above the answer the bound may be: the
 * merges it does not foresee (without isolate both devices' groups may take
 * one device, in one entry), and before 1.29 the candidates spread over a
 * tree that the answer leaves out, with their providers' summaries.
 */
const CASES: Array<{ query: string; version: string; slack: number }> = [
  { query: `${NESTED}&group_policy=isolate`, version: "1.39", slack: 1.02 },
  { query: `${NESTED}&group_policy=none`, version: "1.39", slack: 1.1 },
  { query: `${NESTED}&group_policy=isolate`, version: "1.33", slack: 1.02 },
  { query: `${NESTED.replace(/resources_N/g, "resources")}&group_policy=isolate`, version: "1.29", slack: 1.02 },
  { query: UNSUFFIXED, version: "1.39", slack: 1.02 },
  { query: UNSUFFIXED, version: "1.28", slack: 2.5 },
  { query: UNSUFFIXED, version: "1.17", slack: 2.5 },
  { query: UNSUFFIXED, version: "1.12", slack: 2.5 },
  { query: UNSUFFIXED, version: "1.10", slack: 2.5 },
];

describe("the tree view's upper bound on the bench's nested cloud", () => {
  let t: Harness;
  let service: CandidatesService;

  beforeAll(async () => {
    t = await startHarness();
    await load(t.url, "nested", 60, "ours");
    service = new CandidatesService(t.database.db, t.config, alone("tree-view"));
  });
  afterAll(async () => t?.close());

  for (const { query, version, slack } of CASES) {
    it(`is within ${slack} of ${query} at ${version}, and never short of its requests or summaries`, async () => {
      const { text, bounded, atMost } = await boundedAnswer(service, query, version);
      expect(JSON.parse(text).allocation_requests.length).toBeGreaterThanOrEqual(60);
      expect(bounded).toBeDefined();
      const { answer, bound } = bounded!;
      for (const part of ["all", "requests", "summaries"] as const) {
        expect(bound[part], part).toBeGreaterThanOrEqual(answer[part]);
        expect(bound[part], part).toBeLessThanOrEqual(answer[part] * slack);
      }
      // Asked only whether the answer fits a smaller size, it may stop early, but above that size.
      expect(atMost!(answer.all / 2)).toBeGreaterThan(answer.all / 2);
    });
  }

  it("is counted again once the cloud changed, not remembered from before", async () => {
    const query = `${NESTED}&group_policy=isolate`;
    const before = (await boundedAnswer(service, query, "1.39")).bounded!.bound.all;
    expect((await boundedAnswer(service, query, "1.39")).bounded!.bound.all).toBe(before);
    // One more tree, like the others: the bound grows by at least its summary.
    const res = await t.request("POST", "/resource_providers", { version: "1.20", body: { name: "one-more", uuid: "8d0c5c0e-1c0e-4f5e-9d8b-0a1b2c3d4e5f" } });
    expect(res.status).toBe(200);
    const inventories = await t.request("PUT", "/resource_providers/8d0c5c0e-1c0e-4f5e-9d8b-0a1b2c3d4e5f/inventories", {
      version: "1.20",
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 }, DISK_GB: { total: 100 } } },
    });
    expect(inventories.status).toBe(200);
    const after = await boundedAnswer(service, query, "1.39");
    expect(after.bounded!.bound.all).toBeGreaterThan(before);
    expect(after.bounded!.bound.all).toBeGreaterThanOrEqual(after.bounded!.answer.all);
  });
});

describe("CountedBounds", () => {
  it("counts a weighing once, and again only when asked past where a count stopped", () => {
    const bounds = new CountedBounds();
    let counts = 0;
    // A count that stops as soon as it passes `over`, as answerBytesAtMost does, over an answer of 1,000 bytes.
    const count = (_: unknown, over: number) => {
      counts++;
      return over < 1000 ? over + 1 : 1000;
    };
    const lengths = (key: string) => ({ key }) as Parameters<CountedBounds["atMost"]>[0];
    expect(bounds.atMost(lengths("a"), 100, count)).toBe(101);
    // Still more than any smaller size: no count.
    expect(bounds.atMost(lengths("a"), 50, count)).toBe(101);
    expect(counts).toBe(1);
    // Past where it stopped: counted again, to the end this time, which then answers every size.
    expect(bounds.atMost(lengths("a"), 5000, count)).toBe(1000);
    expect(bounds.atMost(lengths("a"), 10, count)).toBe(1000);
    expect(bounds.atMost(lengths("a"), 9999, count)).toBe(1000);
    expect(counts).toBe(2);
    // Another weighing is counted on its own.
    expect(bounds.atMost(lengths("b"), 5000, count)).toBe(1000);
    expect(counts).toBe(3);
  });
});
