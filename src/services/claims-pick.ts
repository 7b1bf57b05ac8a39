/**
 * The pure half of POST /claims: which of the answer's candidates to try
 * first, and which still fit after some were claimed. No database here; the
 * order only decides what is tried first, the locked capacity check of the
 * allocation write service decides what is taken.
 */
import type { InventoryRoom } from "./candidates/collecting-sink.js";
import { shuffle, type Candidate } from "./candidates/combine.js";

export const PICKS = ["pack", "spread", "random", "first"] as const;
/**
 * pack: fullest providers first (fills hosts before opening new ones, as
 * Nova's negative RAM weigher); spread: emptiest first; random: any order;
 * first: the answer's order (provider id, as GET /allocation_candidates).
 */
export type PickPolicy = (typeof PICKS)[number];

/** Capacity and usage of one provider and class, as the answer read them. */
interface Room {
  capacity: number;
  used: number;
}

/** One number per provider and class (class ids stay far below 2^20, provider ids below 2^31: exact in a double). */
const key = (providerId: number, classId: number) => providerId * 1_048_576 + classId;

/** Candidates with the usage they were found with, kept current as claims are placed. */
export class CandidateView {
  private readonly room = new Map<number, Room>();
  /** Candidates found not to fit when tried under the locks (the read was stale). */
  private readonly refused = new Set<Candidate>();

  constructor(
    readonly candidates: readonly Candidate[],
    rooms: readonly InventoryRoom[],
    private readonly pick: PickPolicy,
    private readonly random: () => number = Math.random,
  ) {
    for (const inv of rooms) this.room.set(key(inv.providerId, inv.resourceClassId), { capacity: inv.capacity, used: inv.used });
  }

  /** Whether the candidate fits on the usage known now (amounts already passed the answer's unit checks). */
  fits(c: Candidate): boolean {
    if (this.refused.has(c)) return false;
    for (const r of c.resources) {
      const room = this.room.get(key(r.providerId, r.resourceClassId));
      if (room === undefined || room.used + r.amount > room.capacity) return false;
    }
    return true;
  }

  /** The candidates that fit, best first for the pick (ties keep the answer's order: the sort is stable). */
  ordered(): Candidate[] {
    const fitting = this.candidates.filter((c) => this.fits(c));
    if (this.pick === "first") return fitting;
    // Any order will do, so a fresh one each time: a shuffle is linear, a sort by drawn places was not.
    if (this.pick === "random") return shuffle(fitting, this.random);
    const sign = this.pick === "pack" ? -1 : 1;
    return fitting
      .map((c) => ({ c, fill: this.fillAfter(c) }))
      .sort((a, b) => sign * (a.fill - b.fill))
      .map((x) => x.c);
  }

  /** A claim of `c` was written: its amounts are used now. */
  claimed(c: Candidate): void {
    for (const r of c.resources) {
      const room = this.room.get(key(r.providerId, r.resourceClassId));
      if (room) room.used += r.amount;
    }
  }

  /** `c` did not fit under the locks: someone else took the room since it was read. */
  refuse(c: Candidate): void {
    this.refused.add(c);
  }

  /** How full the candidate's providers would be after claiming it: the mean over its resources of used / capacity. */
  private fillAfter(c: Candidate): number {
    let sum = 0;
    for (const r of c.resources) {
      const room = this.room.get(key(r.providerId, r.resourceClassId))!;
      sum += room.capacity > 0 ? (room.used + r.amount) / room.capacity : 1;
    }
    return c.resources.length > 0 ? sum / c.resources.length : 0;
  }
}
