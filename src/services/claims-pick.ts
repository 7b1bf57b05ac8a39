/**
 * The pure half of POST /claims: which of the answer's candidates to try
 * first, and which still fit after some were claimed. No database here; the
 * order only decides what is tried first, the locked capacity check of the
 * allocation write service decides what is taken.
 */
import { roomKey, type CollectedAnswer } from "./candidates/collecting-sink.js";
import type { Candidate } from "./candidates/combine.js";

export const PICKS = ["pack", "spread", "random", "first"] as const;
/**
 * pack: fullest providers first (fills hosts before opening new ones, as
 * Nova's negative RAM weigher); spread: emptiest first; random: any order;
 * first: the answer's order (provider id, as GET /allocation_candidates).
 */
export type PickPolicy = (typeof PICKS)[number];

/** Candidates with the usage they were found with, kept current as claims are placed. */
export class CandidateView {
  /** Amounts this claim has placed so far, per provider and class (roomKey). */
  private readonly taken = new Map<number, number>();
  /** Candidates found not to fit when tried under the locks (the read was stale). */
  private readonly refused = new Set<Candidate>();

  constructor(
    private readonly found: CollectedAnswer,
    private readonly pick: PickPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Whether the candidate fits on the usage known now (amounts already passed the answer's unit checks). */
  fits(c: Candidate): boolean {
    if (this.refused.has(c)) return false;
    for (const r of c.resources) {
      const room = this.found.room(r.providerId, r.resourceClassId);
      if (room === undefined || room.used + this.usedHere(r.providerId, r.resourceClassId) + r.amount > room.capacity) return false;
    }
    return true;
  }

  /**
   * The candidates that fit, best first for the pick (ties keep the answer's
   * order). Lazy: a claim mostly takes one of the first few, so random and
   * first build and check only those they hand out; pack and spread must
   * see them all to order them. Each call is a fresh order.
   */
  *ordered(): Generator<Candidate, void, undefined> {
    const n = this.found.size;
    if (this.pick === "first") {
      for (let i = 0; i < n; i++) {
        const c = this.found.candidate(i);
        if (this.fits(c)) yield c;
      }
      return;
    }
    if (this.pick === "random") {
      // Fisher-Yates one draw at a time: a uniform order, paid for only as far as it is read.
      const left = new Int32Array(n);
      for (let i = 0; i < n; i++) left[i] = i;
      for (let end = n; end > 0; end--) {
        const j = Math.floor(this.random() * end);
        const i = left[j];
        left[j] = left[end - 1];
        const c = this.found.candidate(i);
        if (this.fits(c)) yield c;
      }
      return;
    }
    const sign = this.pick === "pack" ? -1 : 1;
    const fitting: Array<{ c: Candidate; fill: number }> = [];
    for (let i = 0; i < n; i++) {
      const c = this.found.candidate(i);
      if (this.fits(c)) fitting.push({ c, fill: this.fillAfter(c) });
    }
    // Stable: ties keep the answer's order.
    fitting.sort((a, b) => sign * (a.fill - b.fill));
    // Checked again as handed out: a candidate refused since the sort is skipped.
    for (const x of fitting) if (this.fits(x.c)) yield x.c;
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
  }

  private usedHere(providerId: number, classId: number): number {
    return this.taken.size === 0 ? 0 : (this.taken.get(roomKey(providerId, classId)) ?? 0);
  }

  /** How full the candidate's providers would be after claiming it: the mean over its resources of used / capacity. */
  private fillAfter(c: Candidate): number {
    let sum = 0;
    for (const r of c.resources) {
      const room = this.found.room(r.providerId, r.resourceClassId)!;
      const used = room.used + this.usedHere(r.providerId, r.resourceClassId);
      sum += room.capacity > 0 ? (used + r.amount) / room.capacity : 1;
    }
    return c.resources.length > 0 ? sum / c.resources.length : 0;
  }
}
