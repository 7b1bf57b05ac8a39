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
});
