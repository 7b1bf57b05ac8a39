/**
 * PLACEMENT_MAX_ANSWER_BYTES on every path of GET /allocation_candidates:
 * an answer larger than the bound is refused with 400 in Placement's error
 * format, naming the bound and `limit`; the same query with a limit, and
 * any answer under the bound, is answered whole. Real PostgreSQL, the
 * bench's own data (flat and nested clouds).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { load } from "../../bench/candidates.js";
import type { CandidatesPath } from "../../src/services/candidates/service.js";
import { startHarness, type Harness } from "../support/harness.js";
import { alone } from "../candidates/data.js";

const FLAT_QUERY = "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10";
const NESTED_QUERY = "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&resources_N1=SRIOV_NET_VF:1&resources_N2=SRIOV_NET_VF:1&group_policy=isolate";
/** Small enough that both clouds' unlimited answers pass it, large enough for a few dozen candidates. */
const BOUND = 48 * 1024;

const clouds = [
  { variant: "flat" as const, nodes: 300, query: FLAT_QUERY, paths: ["flat-view", "flat-source"] satisfies CandidatesPath[] },
  { variant: "nested" as const, nodes: 100, query: NESTED_QUERY, paths: ["tree-view", "general"] satisfies CandidatesPath[] },
];

for (const cloud of clouds) {
  describe(`a ${cloud.variant} cloud of ${cloud.nodes} compute nodes`, () => {
    let bounded: Harness;
    let unbounded: Harness;
    let whole: { bytes: number; candidates: number };

    beforeAll(async () => {
      bounded = await startHarness({ config: { PLACEMENT_MAX_ANSWER_BYTES: BOUND } });
      await load(bounded.url, cloud.variant, cloud.nodes, "ours");
      // The same data without a bound, for the answer the bound refuses.
      unbounded = await startHarness({ config: { PLACEMENT_MAX_ANSWER_BYTES: 0 } });
      await load(unbounded.url, cloud.variant, cloud.nodes, "ours");
      const res = await unbounded.request("GET", `/allocation_candidates?${cloud.query}`);
      expect(res.status).toBe(200);
      whole = { bytes: Buffer.byteLength(res.text), candidates: res.body.allocation_requests.length };
    });

    afterAll(async () => {
      await bounded?.close();
      await unbounded?.close();
    });

    it("has an unlimited answer larger than the bound (what the tests below refuse)", () => {
      expect(whole.bytes).toBeGreaterThan(BOUND);
      expect(whole.candidates).toBeGreaterThanOrEqual(cloud.nodes);
    });

    for (const path of cloud.paths) {
      describe(`answered by ${path}`, () => {
        let request: Harness["request"];
        beforeAll(() => {
          request = bounded.requestVia(alone(path));
        });

        it("refuses the unlimited answer with 400, naming the bound and limit", async () => {
          const res = await request("GET", `/allocation_candidates?${cloud.query}`);
          expect(res.status).toBe(400);
          expect(res.headers.get("content-type")).toMatch(/^application\/json/);
          const [error] = res.body.errors;
          expect(error.status).toBe(400);
          expect(error.title).toBe("Bad Request");
          expect(error.code).toBe("placement.undefined_code");
          expect(error.detail).toContain(`larger than ${BOUND} bytes`);
          expect(error.detail).toContain("PLACEMENT_MAX_ANSWER_BYTES");
          expect(error.detail).toContain("limit");
        });

        it("answers the same query with a limit whole, and again after a refusal", async () => {
          for (let round = 0; round < 2; round++) {
            expect((await request("GET", `/allocation_candidates?${cloud.query}`)).status).toBe(400);
            const res = await request("GET", `/allocation_candidates?${cloud.query}&limit=20`);
            expect(res.status).toBe(200);
            expect(res.body.allocation_requests).toHaveLength(20);
            expect(Buffer.byteLength(res.text)).toBeLessThanOrEqual(BOUND);
          }
        });
      });
    }

    it("answers anything up to the bound: an answer of exactly the bound's size is not refused", async () => {
      const exact = await startHarness({ config: { PLACEMENT_MAX_ANSWER_BYTES: whole.bytes } });
      try {
        await load(exact.url, cloud.variant, cloud.nodes, "ours");
        const res = await exact.request("GET", `/allocation_candidates?${cloud.query}`);
        expect(res.status).toBe(200);
        expect(Buffer.byteLength(res.text)).toBe(whole.bytes);
        expect(res.body.allocation_requests).toHaveLength(whole.candidates);
        const under = await exact.requestVia(alone(cloud.paths[1]))("GET", `/allocation_candidates?${cloud.query}`);
        expect(under.status).toBe(200);
        expect(under.body.allocation_requests).toHaveLength(whole.candidates);
        // One byte less is one byte too many.
        const tight = await startHarness({ config: { PLACEMENT_MAX_ANSWER_BYTES: whole.bytes - 1 } });
        try {
          await load(tight.url, cloud.variant, cloud.nodes, "ours");
          expect((await tight.request("GET", `/allocation_candidates?${cloud.query}`)).status).toBe(400);
        } finally {
          await tight.close();
        }
      } finally {
        await exact.close();
      }
    });
  });
}
