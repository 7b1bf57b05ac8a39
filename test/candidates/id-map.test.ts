/**
 * IdMap and IdSet answer as a Map and a Set of the same ids would, with keys
 * and values in increasing id order, for ids clustered as a request's are,
 * scattered, and up to PostgreSQL's largest integer.
 */
import { describe, expect, it } from "vitest";
import { IdMap, IdSet } from "../../src/services/candidates/id-map.js";

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

const LARGEST_ID = 2147483647;

describe("IdMap", () => {
  it.each([
    ["clustered", (r: () => number) => 5000 + Math.floor(r() * 3000)],
    ["scattered", (r: () => number) => 1 + Math.floor(r() * 5_000_000)],
    ["near the largest id", (r: () => number) => LARGEST_ID - Math.floor(r() * 5000)],
  ])("matches a Map for %s ids", (_, nextId) => {
    const r = random(7);
    const ours = new IdMap<string>();
    const theirs = new Map<number, string>();
    for (let i = 0; i < 5000; i++) {
      const id = nextId(r);
      if (r() < 0.7) {
        ours.set(id, `v${i}`);
        theirs.set(id, `v${i}`);
      }
      expect(ours.get(id)).toBe(theirs.get(id));
    }
    const ids = [...theirs.keys()].sort((a, b) => a - b);
    expect([...ours.keys()]).toEqual(ids);
    expect([...ours.values()]).toEqual(ids.map((id) => theirs.get(id)));
    const visited: Array<[string, number]> = [];
    ours.forEach((v, id) => {
      visited.push([v, id]);
    });
    expect(visited).toEqual(ids.map((id) => [theirs.get(id), id]));
  });

  it("holds nothing after clear, and fills again", () => {
    const m = new IdMap<number>().set(3, 30).set(2000, 20);
    m.clear();
    expect(m.get(3)).toBeUndefined();
    expect([...m.keys()]).toEqual([]);
    m.set(2000, 21);
    expect([...m.values()]).toEqual([21]);
  });

  it("holds a replaced value once", () => {
    const m = new IdMap<string>().set(9, "a").set(9, "b");
    expect([...m.keys()]).toEqual([9]);
    expect(m.get(9)).toBe("b");
  });
});

describe("IdSet", () => {
  it("iterates its ids in increasing order, once each", () => {
    const s = new IdSet();
    for (const id of [4097, 3, 1024, 3, 1023, LARGEST_ID]) s.add(id);
    expect([...s]).toEqual([3, 1023, 1024, 4097, LARGEST_ID]);
    const visited: number[] = [];
    s.forEach((id) => {
      visited.push(id);
    });
    expect(visited).toEqual([3, 1023, 1024, 4097, LARGEST_ID]);
    expect(s.has(1024)).toBe(true);
    expect(s.has(1025)).toBe(false);
  });
});
