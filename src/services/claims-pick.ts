/**
 * The pure half of POST /claims: which of the answer's candidates to try
 * first, and which still fit after some were claimed. No database here; the
 * order only decides what is tried first, the locked capacity check of the
 * allocation write service decides what is taken.
 */
import { roomKey, type CollectedAnswer, type UniformCandidates } from "./candidates/collecting-sink.js";
import type { Candidate } from "./candidates/combine.js";

export const PICKS = ["pack", "spread", "random", "first"] as const;
/**
 * pack: fullest providers first (fills hosts before opening new ones, as
 * Nova's negative RAM weigher); spread: emptiest first; random: any order;
 * first: the answer's order (provider id, as GET /allocation_candidates).
 */
export type PickPolicy = (typeof PICKS)[number];

/**
 * Candidates with the usage they were found with, kept current as claims are
 * placed. Over an answer whose candidates are uniform (CollectedAnswer's
 * `uniform`: a flat answer, one provider each) it checks and orders them by
 * index, building only the candidates it hands out; over any other it reads
 * the built candidates. Both give the same order (test/claims/pick.test.ts
 * holds the first to the second).
 */
export class CandidateView {
  /** Amounts this claim has placed so far, per provider and class (roomKey). */
  private readonly taken = new Map<number, number>();
  /** Candidates found not to fit when tried under the locks (the read was stale). */
  private readonly refused = new Set<Candidate>();
  /** Over uniform candidates: the providers of those refused (one candidate per provider). */
  private readonly refusedProviders = new Set<number>();
  private readonly uniform: UniformCandidates | undefined;

  constructor(
    private readonly found: CollectedAnswer,
    private readonly pick: PickPolicy,
    private readonly random: () => number = Math.random,
    /** false: read the built candidates even when the answer is uniform (the oracle of the uniform reads). */
    byIndex = true,
  ) {
    this.uniform = byIndex ? found.uniform : undefined;
  }

  /** Whether the candidate fits on the usage known now (amounts already passed the answer's unit checks). */
  fits(c: Candidate): boolean {
    return this.candidateFill(c) >= 0;
  }

  /**
   * The candidates that fit, best first for the pick (ties keep the answer's
   * order). Lazy: a claim mostly takes one of the first few, so random and
   * first build and check only those they hand out, and pack and spread,
   * which must see them all to order them, build only those they hand out
   * when the answer is uniform. Each call is a fresh order.
   */
  *ordered(): Generator<Candidate, void, undefined> {
    const n = this.found.size;
    if (this.pick === "first") {
      for (let i = 0; i < n; i++) if (this.fitsAt(i)) yield this.found.candidate(i);
      return;
    }
    if (this.pick === "random") {
      // Fisher-Yates one draw at a time: a uniform order, paid for only as far as it is read. Only the
      // positions a draw moved are kept (any other still holds its own index): a claim reads a few
      // candidates of a thousand, and an array of them all, made per claim, was memory outside the
      // heap for the garbage collector to sweep.
      const moved = new Map<number, number>();
      for (let end = n; end > 0; end--) {
        const j = Math.floor(this.random() * end);
        const i = moved.get(j) ?? j;
        moved.set(j, moved.get(end - 1) ?? end - 1);
        if (this.fitsAt(i)) yield this.found.candidate(i);
      }
      return;
    }
    const sign = this.pick === "pack" ? -1 : 1;
    // Each candidate's place in the order: its fill, negated for pack, so the smallest comes first. One pass
    // checks and weighs each candidate into typed arrays, reading each inventory once: over a thousand hosts
    // this ordering is made at every claim a packing scheduler sends.
    const key = new Float64Array(n);
    const heap = new Int32Array(n);
    let size = 0;
    for (let i = 0; i < n; i++) {
      const f = this.fillIfFits(i);
      if (f < 0) continue;
      key[i] = sign * f;
      heap[size++] = i;
    }
    // A binary heap, best on top, read off one candidate at a time: a claim takes one of the first few, and
    // a sort of every fitting candidate would compare them n log n times for it, at every ordering. Ties keep
    // the answer's order, so the order is the sort's.
    for (let k = (size >> 1) - 1; k >= 0; k--) siftDown(heap, k, size, key);
    for (; size > 0; size--) {
      const i = heap[0];
      heap[0] = heap[size - 1];
      siftDown(heap, 0, size - 1, key);
      // Checked again as handed out: a candidate refused since the heap was made is skipped.
      if (this.fitsAt(i)) yield this.found.candidate(i);
    }
  }

  /** A claim of `c` was written: its amounts are used now. */
  claimed(c: Candidate): void {
    for (const r of c.resources) {
      const k = roomKey(r.providerId, r.resourceClassId);
      this.taken.set(k, (this.taken.get(k) ?? 0) + r.amount);
    }
  }

  /** `c` did not fit under the locks: someone else took the room since it was read. */
  refuse(c: Candidate): void {
    this.refused.add(c);
    if (this.uniform) this.refusedProviders.add(c.resources[0].providerId);
  }

  /** Whether the answer's i-th candidate fits (fits), read by index when the answer is uniform. */
  private fitsAt(i: number): boolean {
    return this.fillIfFits(i) >= 0;
  }

  private usedHere(providerId: number, classId: number): number {
    return this.taken.size === 0 ? 0 : (this.taken.get(roomKey(providerId, classId)) ?? 0);
  }

  /**
   * How full the i-th candidate's providers would be after claiming it (the
   * mean over its resources of used / capacity), or -1 when it does not fit,
   * in one reading of each inventory: the one check of whether it fits.
   */
  private fillIfFits(i: number): number {
    const u = this.uniform;
    if (u === undefined) return this.candidateFill(this.found.candidate(i));
    let sum = 0;
    const p = u.provider(i);
    if (this.refusedProviders.size > 0 && this.refusedProviders.has(p)) return -1;
    for (const t of u.takes) {
      const capacity = u.capacity(i, t.classId);
      const used = u.used(i, t.classId) + this.usedHere(p, t.classId) + t.amount;
      if (used > capacity) return -1;
      sum += fillOf(capacity, used);
    }
    return u.takes.length > 0 ? sum / u.takes.length : 0;
  }

  /** fillIfFits over a built candidate: its fill after the claim, or -1 when it does not fit. */
  private candidateFill(c: Candidate): number {
    if (this.refused.has(c)) return -1;
    let sum = 0;
    for (const r of c.resources) {
      const room = this.found.room(r.providerId, r.resourceClassId);
      if (room === undefined) return -1;
      const used = room.used + this.usedHere(r.providerId, r.resourceClassId) + r.amount;
      if (used > room.capacity) return -1;
      sum += fillOf(room.capacity, used);
    }
    return c.resources.length > 0 ? sum / c.resources.length : 0;
  }
}

/** Whether candidate a comes before candidate b: the smaller key, or on a tie the answer's order. */
const before = (key: Float64Array, a: number, b: number): boolean => key[a] < key[b] || (key[a] === key[b] && a < b);

/** Moves heap[k] down the first `size` places of the heap until neither child comes before it. */
function siftDown(heap: Int32Array, k: number, size: number, key: Float64Array): void {
  const item = heap[k];
  for (;;) {
    let child = 2 * k + 1;
    if (child >= size) break;
    if (child + 1 < size && before(key, heap[child + 1], heap[child])) child++;
    if (!before(key, heap[child], item)) break;
    heap[k] = heap[child];
    k = child;
  }
  heap[k] = item;
}

/** An inventory's share used once `used` is: 1 when it has no capacity. */
const fillOf = (capacity: number, used: number): number => (capacity > 0 ? used / capacity : 1);
