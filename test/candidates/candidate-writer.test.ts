/**
 * The allocation requests the candidates body writes, byte for byte against
 * the same requests built as objects and given to JSON.stringify, over
 * random trees whose groups share providers or not (the writer copies an
 * option's part whole only when no other group of the candidate takes from
 * its providers), at every response shape. No database.
 */
import { describe, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import { bodyText, fastBody } from "../support/bodies.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { mergeGroups, roundRobin, type Candidate, type GroupOption, type ResourceRequest } from "../../src/services/candidates/combine.js";
import type { CandidatesResult } from "../../src/services/candidates/engine.js";

const CLASSES = ["", "VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF"];
const uuidOf = (id: number) => `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`;
const names = { uuidOf, resourceClassName: (id: number) => CLASSES[id] };
const emptyResult: CandidatesResult = { candidates: [], count: 0, summaries: [], ...names };
const query = { groups: [], params: {} } as unknown as CandidatesQuery;

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/**
 * Each group's options in one tree: providers of the tree (root * 10 + 0..4)
 * or one of two sharing providers, distinct classes per option; groups often
 * land on the same provider, so some candidates add amounts up.
 */
function treeOptions(root: number, groups: number, pick: (n: number) => number, options = 3): GroupOption[][] {
  const provider = () => (pick(5) === 0 ? 9000 + pick(2) : root * 10 + pick(5));
  return Array.from({ length: groups }, (_, g) => {
    const suffix = g === 0 ? "" : `_G${g}`;
    return Array.from({ length: 1 + pick(options) }, () => {
      const classes = [1, 2, 3, 4].filter(() => pick(2) === 0).slice(0, 1 + pick(3));
      if (classes.length === 0) classes.push(1 + pick(4));
      const granular = g > 0;
      const only = provider();
      const resources: ResourceRequest[] = classes.map((rc) => ({ providerId: granular ? only : provider(), resourceClassId: rc, amount: 1 + pick(3) }));
      const providers = [...new Set(resources.map((r) => r.providerId))].sort((a, b) => a - b);
      return { suffix, sameProvider: granular, resources, providers };
    });
  });
}

/** One allocation request as Placement's objects, in the writer's order: providers by first appearance. */
function expected(cand: Candidate, mv: Microversion): unknown {
  const byProvider = new Map<number, Record<string, number>>();
  for (const rr of cand.resources) {
    const classes = byProvider.get(rr.providerId) ?? {};
    classes[CLASSES[rr.resourceClassId]] = rr.amount;
    byProvider.set(rr.providerId, classes);
  }
  if (!mv.atLeast("1.12")) return { allocations: [...byProvider].map(([p, resources]) => ({ resource_provider: { uuid: uuidOf(p) }, resources })) };
  const allocations = Object.fromEntries([...byProvider].map(([p, resources]) => [uuidOf(p), { resources }]));
  if (!mv.atLeast("1.34")) return { allocations };
  return { allocations, mappings: Object.fromEntries(cand.groups.map((o) => [o.suffix, o.providers.map(uuidOf)])) };
}

async function written(cands: Candidate[], mv: Microversion): Promise<string> {
  const body = fastBody(answerShape(mv), query);
  const answering = (async () => {
    await Promise.resolve();
    for (const c of cands) body.candidate(c, names);
    body.end(emptyResult);
  })();
  return bodyText(await body.respond(answering, () => {}));
}

const rules = { isolate: false, sameSubtrees: [], parentOf: () => null, capacityOf: () => ({ capacity: 1000, used: 0, maxUnit: 1000 }) };

describe("the candidates body's allocation requests", () => {
  for (const version of ["1.10", "1.12", "1.34", "1.39"] as const) {
    it(`are what JSON.stringify makes of them at ${version}, trees in turn or interleaved`, async () => {
      const mv = Microversion.from(version);
      for (let seed = 1; seed <= 12; seed++) {
        const pick = random(seed);
        const trees = Array.from({ length: 40 }, (_, t) => ({ root: t + 1, options: treeOptions(t + 1, 1 + pick(3), pick) }));
        const generators = () => trees.map((t) => mergeGroups(t.root, t.options, rules));
        // Interleaved (breadth-first) comes back to a tree after others, with its options written before.
        const cands = seed % 2 === 0 ? [...roundRobin(generators())] : generators().flatMap((g) => [...g]);
        expect(cands.length).toBeGreaterThan(40);
        const want = JSON.stringify({ allocation_requests: cands.map((c) => expected(c, mv)), provider_summaries: {} });
        expect(await written(cands, mv)).toBe(want);
      }
    });
  }

  it("are exact for trees of more options than the writer keeps the parts of", async () => {
    const mv = Microversion.from("1.39");
    const pick = random(7);
    const trees = Array.from({ length: 6 }, (_, t) => ({ root: t + 1, options: treeOptions(t + 1, 3, pick, 40) }));
    expect(trees.some((t) => t.options.flat().length > 32)).toBe(true);
    const cands = trees.flatMap((t) => [...mergeGroups(t.root, t.options, rules)]);
    const want = JSON.stringify({ allocation_requests: cands.map((c) => expected(c, mv)), provider_summaries: {} });
    expect(await written(cands, mv)).toBe(want);
  });

  it("stay exact across the writer's chunks and in a body that streams", async () => {
    const mv = Microversion.from("1.39");
    const pick = random(99);
    const trees = Array.from({ length: 1500 }, (_, t) => ({ root: t + 1, options: treeOptions(t + 1, 3, pick) }));
    const cands = trees.flatMap((t) => [...mergeGroups(t.root, t.options, rules)]);
    const want = JSON.stringify({ allocation_requests: cands.map((c) => expected(c, mv)), provider_summaries: {} });
    expect(want.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(await written(cands, mv)).toBe(want);
  });
});
