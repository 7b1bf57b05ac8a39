/**
 * The render cache (src/render/candidates/cache.ts): the uuid arena it keeps
 * across answers, and what its close() releases. No database.
 */
import { describe, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import { RenderCache } from "../../src/render/candidates/cache.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import type { CandidatesResult } from "../../src/services/candidates/engine.js";
import { bodyText, fastBody } from "../support/bodies.js";

const uuidOf = (id: number) => `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`;
const names = { uuidOf, resourceClassName: () => "VCPU" };
const query = { groups: [], params: {} } as unknown as CandidatesQuery;

/** An answer of `count` one-provider candidates and their summaries, written over `cache`. */
async function answer(cache: RenderCache, count: number): Promise<string> {
  const body = fastBody(answerShape(Microversion.from("1.39")), query, { cache });
  const summaries: CandidatesResult["summaries"] = [];
  const answering = (async () => {
    await Promise.resolve();
    for (let id = 1; id <= count; id++) {
      const resources = [{ providerId: id, resourceClassId: 1, amount: 1 }];
      body.candidate({ anchorRootId: id, resources, groups: [{ suffix: "", sameProvider: false, resources, providers: [id] }] }, names);
      const provider = { id, uuid: uuidOf(id), parentId: null, rootId: id } as unknown as CandidatesResult["summaries"][number]["provider"];
      summaries.push({ provider, inventories: [{ providerId: id, resourceClassId: 1, capacity: 8, used: id % 3 }] as never, traits: [] });
    }
    body.end({ candidates: [], count, summaries, ...names });
  })();
  const text = await bodyText(await body.respond(answering, () => {}));
  body.recycle();
  return text;
}

describe("the render cache's uuid arena", () => {
  it("keeps a provider's encoded uuid across answers, but never spells another uuid for its id", () => {
    const pieces = new RenderCache();
    const arena = pieces.arena();
    const slot = (k: number) => arena.buffer.toString("latin1", arena.starts[k], arena.ends[k] + 15);
    const first = arena.of(7, uuidOf(7));
    // The same uuid read again (a string of its own, as each answer reads it) finds the kept slot.
    expect(arena.of(7, `${uuidOf(7)} `.trim())).toBe(first);
    expect(slot(first)).toBe(`${JSON.stringify(uuidOf(7))}:{"resources":{`);
    // A database that now gives the id another uuid gets that uuid.
    const other = "11111111-2222-4333-8444-555555555555";
    const again = arena.of(7, other);
    expect(slot(again)).toBe(`${JSON.stringify(other)}:{"resources":{`);
    // One that differs from the kept one in its last character only, and then the first one again.
    const last = `${other.slice(0, -1)}6`;
    expect(slot(arena.of(7, last))).toBe(`${JSON.stringify(last)}:{"resources":{`);
    expect(slot(arena.of(7, uuidOf(7)))).toBe(`${JSON.stringify(uuidOf(7))}:{"resources":{`);
    // A uuid of another length (a row written around the API) gets a slot of its length.
    const short = arena.of(8, "0123456789abcdef0123456789abcdef");
    expect(slot(short)).toBe('"0123456789abcdef0123456789abcdef":{"resources":{');
    // The arena grows past its first buffer; every slot keeps its bytes.
    const slots = Array.from({ length: 3000 }, (_, i) => arena.of(100 + i, uuidOf(100 + i)));
    expect(slots.every((at, i) => slot(at) === `${JSON.stringify(uuidOf(100 + i))}:{"resources":{`)).toBe(true);
    expect(slot(first)).toBe(`${JSON.stringify(uuidOf(7))}:{"resources":{`);
    expect(pieces.arena()).toBe(arena);
  });

  it("starts the next answer on a new arena once one holds more than 65,536 providers, and the answer before keeps its own", () => {
    const pieces = new RenderCache();
    const arena = pieces.arena();
    for (let id = 1; id <= 65_537; id++) arena.of(id, uuidOf(id));
    const next = pieces.arena();
    expect(next).not.toBe(arena);
    expect(next.size).toBe(0);
    const k = arena.of(65_537, uuidOf(65_537));
    expect(arena.buffer.toString("latin1", arena.starts[k], arena.ends[k])).toBe(JSON.stringify(uuidOf(65_537)));
  });
});

describe("RenderCache.close", () => {
  it("drops the free buffers, the arena and keeps nothing given back after; answers after it are written alike", async () => {
    const cache = new RenderCache();
    const before = await answer(cache, 2000);
    expect(cache.buffers.keptBytes).toBeGreaterThan(0);
    const arena = cache.arena();
    expect(arena.size).toBe(2000);
    cache.close();
    expect(cache.buffers.keptBytes).toBe(0);
    const after = await answer(cache, 2000);
    expect(after).toBe(before);
    expect(JSON.parse(after).allocation_requests).toHaveLength(2000);
    // A new arena, and the buffers of the answer written after close() are not kept.
    expect(cache.arena()).not.toBe(arena);
    expect(cache.buffers.keptBytes).toBe(0);
  });
});
