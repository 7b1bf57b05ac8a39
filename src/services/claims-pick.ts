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

const key = (providerId: number, classId: number) => `${providerId}:${classId}`;

/** Candidates with the usage they were found with, kept current as claims are placed. */
export class CandidateView {
  private readonly room = new Map<string, Room>();
  /** Candidates found not to fit when tried under the locks (the read was stale). */
  private readonly refused = new Set<Candidate>();
  private readonly randomOrder: Map<Candidate, number>;

  constructor(
    readonly candidates: readonly Candidate[],
    rooms: readonly InventoryRoom[],
    private readonly pick: PickPolicy,
    random: () => number = Math.random,
  ) {
    for (const inv of rooms) this.room.set(key(inv.providerId, inv.resourceClassId), { capacity: inv.capacity, used: inv.used });
    this.randomOrder = new Map(shuffle([...candidates], random).map((c, i) => [c, i]));
  }

  /** Whether the candidate fits on the usage known now (amounts already passed the answer's unit checks). */
  fits(c: Candidate): boolean {
    if (this.refused.has(c)) return false;
    return c.resources.every((r) => {
      const room = this.room.get(key(r.providerId, r.resourceClassId));
      return room !== undefined && room.used + r.amount <= room.capacity;
    });
  }

  /** The candidates that fit, best first for the pick (ties keep the answer's order). */
  ordered(): Candidate[] {
    const fitting = this.candidates.filter((c) => this.fits(c));
    if (this.pick === "first") return fitting;
    if (this.pick === "random") return fitting.sort((a, b) => this.randomOrder.get(a)! - this.randomOrder.get(b)!);
    const fill = new Map(fitting.map((c) => [c, this.fillAfter(c)]));
    const sign = this.pick === "pack" ? -1 : 1;
    return fitting.sort((a, b) => sign * (fill.get(a)! - fill.get(b)!));
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
