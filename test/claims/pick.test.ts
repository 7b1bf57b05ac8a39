/**
 * CandidateView, the pure half of POST /claims: which candidates to try, in
 * which order. It hands them out lazily, so a claim that takes one of the
 * first few builds only those; these tests hold it to the order each pick
 * promises, to what still fits, and to building no more than it hands out.
 */
import { describe, expect, it } from "vitest";
import { roomKey, type CollectedAnswer, type InventoryRoom } from "../../src/services/candidates/collecting-sink.js";
import type { Candidate } from "../../src/services/candidates/combine.js";
import { CandidateView, PICKS } from "../../src/services/claims-pick.js";

/** One-provider candidates asking `amount` VCPU (class 1) of providers with these [capacity, used]; counts the candidates built. */
function answer(providers: Array<[number, number]>, amount = 1): CollectedAnswer & { built: number } {
  return answerOf(
    providers.map(([capacity, used]) => [{ capacity, used }]),
    [amount],
  );
}

/**
 * Candidate i takes `amounts[k]` of class k + 1 from provider i + 1 alone,
 * whose rooms are `providers[i]` (one per class), as a flat answer does:
 * uniform, so a view may read it by index.
 */
function answerOf(providers: InventoryRoom[][], amounts: number[]): CollectedAnswer & { built: number } {
  const rooms = new Map<number, InventoryRoom>(providers.flatMap((r, i) => r.map((room, k) => [roomKey(i + 1, k + 1), room] as const)));
  const candidates = new Map<number, Candidate>();
  const takes = amounts.map((amount, k) => ({ classId: k + 1, amount }));
  const found = {
    built: 0,
    size: providers.length,
    candidate(i: number): Candidate {
      let c = candidates.get(i);
      if (!c) {
        found.built++;
        const resources = takes.map((t) => ({ providerId: i + 1, resourceClassId: t.classId, amount: t.amount }));
        c = { anchorRootId: i + 1, resources, groups: [{ suffix: "", sameProvider: false, resources, providers: [i + 1] }] };
        candidates.set(i, c);
      }
      return c;
    },
    room: (providerId: number, classId: number) => rooms.get(roomKey(providerId, classId)),
    uuidOf: (id: number) => `rp-${id}`,
    resourceClassName: () => "VCPU",
    uniform: {
      takes,
      provider: (i: number) => i + 1,
      capacity: (i: number, classId: number) => providers[i][classId - 1].capacity,
      used: (i: number, classId: number) => providers[i][classId - 1].used,
    },
  };
  return found;
}

const providersOf = (cs: Iterable<Candidate>) => [...cs].map((c) => c.anchorRootId);

/** A seeded generator, so an order drawn at random is the same on every run. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

describe("CandidateView", () => {
  it("random hands out every fitting candidate once, in an order that differs between draws", () => {
    const found = answer([[4, 0], [4, 4], [4, 1], [4, 3], [4, 0], [4, 2]]);
    const view = new CandidateView(found, "random", seeded(7));
    const draws = Array.from({ length: 8 }, () => providersOf(view.ordered()));
    // Provider 2 is full: never offered.
    for (const d of draws) expect([...d].sort()).toEqual([1, 3, 4, 5, 6]);
    expect(new Set(draws.map((d) => d.join(","))).size).toBeGreaterThan(1);
  });

  it("random hands out the order Fisher-Yates draws from the same numbers", () => {
    const n = 50;
    const order = providersOf(new CandidateView(answer(Array.from({ length: n }, (): [number, number] => [4, 0])), "random", seeded(11)).ordered());
    // The shuffle over an array of every index, drawing from the same sequence.
    const draw = seeded(11);
    const left = Array.from({ length: n }, (_, i) => i);
    const expected: number[] = [];
    for (let end = n; end > 0; end--) {
      const j = Math.floor(draw() * end);
      expected.push(left[j] + 1);
      left[j] = left[end - 1];
    }
    expect(order).toEqual(expected);
  });

  it("random and first build only the candidates read", () => {
    for (const pick of ["random", "first"] as const) {
      const found = answer(Array.from({ length: 1000 }, (): [number, number] => [8, 0]));
      const it = new CandidateView(found, pick, seeded(3)).ordered();
      for (let i = 0; i < 32; i++) expect(it.next().done).toBe(false);
      expect(found.built).toBe(32);
    }
  });

  it("over a uniform answer, pack and spread build only the candidates read", () => {
    for (const pick of ["pack", "spread"] as const) {
      const found = answer(Array.from({ length: 1000 }, (_, i): [number, number] => [8, i % 8]));
      const it = new CandidateView(found, pick).ordered();
      for (let i = 0; i < 32; i++) expect(it.next().done).toBe(false);
      expect(found.built).toBe(32);
    }
  });

  it("reads a uniform answer by index in the very order it reads the built candidates", () => {
    const draw = seeded(11);
    const int = (n: number) => Math.floor(draw() * n);
    for (let round = 0; round < 200; round++) {
      const classes = 1 + int(3);
      const providers = Array.from({ length: 1 + int(40) }, () =>
        Array.from({ length: classes }, () => {
          const capacity = int(4) === 0 ? 0 : 1 + int(16);
          return { capacity, used: int(capacity + 1) };
        }),
      );
      const amounts = Array.from({ length: classes }, () => 1 + int(4));
      for (const pick of PICKS) {
        // The same claims and refusals on both, then the same draws for random.
        const views = [true, false].map((byIndex) => {
          const found = answerOf(providers, amounts);
          return { found, view: new CandidateView(found, pick, seeded(round), byIndex) };
        });
        for (let step = 0; step < 3; step++) {
          const orders = views.map(({ view }) => providersOf(view.ordered()));
          expect(orders[0], `round ${round}, ${pick}, step ${step}`).toEqual(orders[1]);
          if (orders[0].length === 0) break;
          const chosen = orders[0][int(orders[0].length)] - 1;
          const refuse = int(2) === 0;
          for (const { found, view } of views) {
            if (refuse) view.refuse(found.candidate(chosen));
            else view.claimed(found.candidate(chosen));
          }
        }
      }
    }
  });

  it("pack orders fullest first, spread emptiest first, first keeps the answer's order", () => {
    const providers: Array<[number, number]> = [[8, 2], [8, 6], [8, 0], [8, 4]];
    expect(providersOf(new CandidateView(answer(providers), "pack").ordered())).toEqual([2, 4, 1, 3]);
    expect(providersOf(new CandidateView(answer(providers), "spread").ordered())).toEqual([3, 1, 4, 2]);
    expect(providersOf(new CandidateView(answer(providers), "first").ordered())).toEqual([1, 2, 3, 4]);
  });

  it("pack and spread hand out the order a full sort of the fitting candidates gives, ties in the answer's order", () => {
    const draw = seeded(5);
    const int = (n: number) => Math.floor(draw() * n);
    for (let round = 0; round < 100; round++) {
      // Few distinct amounts, so many candidates tie.
      const providers = Array.from({ length: 1 + int(300) }, (): [number, number] => [4, int(5)]);
      const fits = providers.map(([capacity, used], i) => ({ id: i + 1, fits: used + 1 <= capacity, fill: (used + 1) / capacity }));
      for (const [pick, sign] of [["pack", -1], ["spread", 1]] as const) {
        const sorted = fits.filter((p) => p.fits).sort((a, b) => sign * (a.fill - b.fill) || a.id - b.id);
        expect(providersOf(new CandidateView(answer(providers), pick).ordered()), `round ${round}, ${pick}`).toEqual(sorted.map((p) => p.id));
      }
    }
  });

  it("what this claim placed and what was refused under the locks no longer fit", () => {
    const found = answer([[4, 2], [4, 0], [4, 0]], 2);
    const view = new CandidateView(found, "first");
    const [one, two, three] = [0, 1, 2].map((i) => found.candidate(i));
    view.claimed(one);
    view.refuse(three);
    expect(providersOf(view.ordered())).toEqual([2]);
    view.claimed(two);
    expect(view.fits(two)).toBe(true);
    view.claimed(two);
    expect(providersOf(view.ordered())).toEqual([]);
  });
});
