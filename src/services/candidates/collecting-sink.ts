/**
 * A sink that keeps an answer instead of rendering it: the candidates in
 * answer order, the capacity and usage of the inventories they take from as
 * the answer saw them, and the names to show them by. POST /claims answers
 * through it from the same paths, and the same cloud view, as GET
 * /allocation_candidates, outside any transaction; what it keeps is only a
 * list of what to try, checked again under locks (services/claims.ts).
 */
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { Candidate } from "./combine.js";
import { classRequests, type FlatAnchor, type FlatAnswer } from "./flat-answer.js";
import type { CandidatesResult, NamesById } from "./generate.js";
import type { CandidatesSink } from "./paths/path.js";

/** Capacity and usage of one inventory as the answer read it. */
export interface InventoryRoom {
  capacity: number;
  used: number;
}

/** One number per provider and class (class ids stay far below 2^20, provider ids below 2^31: exact in a double). */
export const roomKey = (providerId: number, classId: number): number => providerId * 1_048_576 + classId;

/**
 * The answer as a claim reads it. A claim usually takes one of the first few
 * candidates it tries, so they are built when first asked for: a flat answer
 * of a thousand hosts keeps its anchors and builds only the candidates tried.
 */
export interface CollectedAnswer extends NamesById {
  /** How many candidates the answer has. */
  readonly size: number;
  /** The i-th candidate in the answer's order; the same object each time it is asked for. */
  candidate(i: number): Candidate;
  /** Capacity and usage as the answer read them, for every inventory the candidates take from. */
  room(providerId: number, resourceClassId: number): InventoryRoom | undefined;
  /**
   * Given when every candidate is on a provider of its own and takes the
   * same amounts from it (a flat answer): what a pick reads of the i-th
   * candidate without building it (claims-pick.ts). Undefined otherwise.
   */
  readonly uniform?: UniformCandidates;
}

/**
 * The candidates of an answer in which the i-th takes `takes` from provider
 * `provider(i)` alone, no two on one provider; the room of each, as the
 * answer read it, by the candidate's index (no lookup, no allocation).
 */
export interface UniformCandidates {
  readonly takes: ReadonlyArray<{ readonly classId: number; readonly amount: number }>;
  provider(i: number): number;
  capacity(i: number, classId: number): number;
  used(i: number, classId: number): number;
}

export class CollectingSink implements CandidatesSink {
  private candidates: Candidate[] = [];
  private collected: CollectedAnswer | undefined;

  constructor(private readonly query: CandidatesQuery) {}

  // A property, not a method: the engine is handed it alone as its onCandidate.
  candidate = (c: Candidate): void => {
    this.candidates.push(c);
  };

  end(result: CandidatesResult): void {
    const candidates = this.candidates;
    let rooms: Map<number, InventoryRoom> | undefined;
    this.collected = {
      size: candidates.length,
      candidate: (i) => candidates[i],
      room: (providerId, classId) => {
        rooms ??= new Map(result.summaries.flatMap((s) => s.inventories.map((inv) => [roomKey(inv.providerId, inv.resourceClassId), inv] as const)));
        return rooms.get(roomKey(providerId, classId));
      },
      uuidOf: result.uuidOf,
      resourceClassName: result.resourceClassName,
    };
  }

  /** A flat answer's anchors, each a candidate where the provider takes every group's resources (amounts of one class summed, as the merge does). */
  flat(answer: FlatAnswer): void {
    const classIds = answer.names.resourceClasses;
    const sums = [...classRequests(this.query.groups)].map(([name, r]) => ({ classId: classIds.get(name)!, amount: r.sum }));
    const groups = this.query.groups.map((g) => ({
      suffix: g.suffix,
      sameProvider: g.useSameProvider,
      resources: [...g.resources].map(([name, amount]) => ({ classId: classIds.get(name)!, amount })),
    }));
    const single = groups.length === 1;
    // The anchors of the candidates built so far: every provider a claim asks about is one of theirs.
    const anchors = new Map<number, FlatAnchor>();
    const anchor = (id: number): FlatAnchor | undefined => {
      if (!anchors.has(id)) for (const a of answer.anchors) anchors.set(a.id, a);
      return anchors.get(id);
    };
    const built: Array<Candidate | undefined> = [];
    const build = (a: FlatAnchor): Candidate => {
      anchors.set(a.id, a);
      const resources = sums.map((s) => ({ providerId: a.id, resourceClassId: s.classId, amount: s.amount }));
      const providers = [a.id];
      return {
        anchorRootId: a.id,
        resources,
        // One group's resources are the candidate's.
        groups: groups.map((g) => ({
          suffix: g.suffix,
          sameProvider: g.sameProvider,
          resources: single ? resources : g.resources.map((r) => ({ providerId: a.id, resourceClassId: r.classId, amount: r.amount })),
          providers,
        })),
      };
    };
    this.collected = {
      size: answer.anchors.length,
      candidate: (i) => (built[i] ??= build(answer.anchors[i])),
      room: (providerId, classId) => {
        const a = anchor(providerId);
        if (!a || !sums.some((s) => s.classId === classId)) return undefined;
        return { capacity: pairValue(a.details.inventories, classId), used: pairValue(a.used, classId) };
      },
      uuidOf: (id) => anchor(id)!.details.uuid,
      resourceClassName: (id) => answer.classNames.get(id)!,
      uniform: {
        takes: sums,
        provider: (i) => answer.anchors[i].id,
        capacity: (i, classId) => pairValue(answer.anchors[i].details.inventories, classId),
        used: (i, classId) => pairValue(answer.anchors[i].used, classId),
      },
    };
  }

  discard(): boolean {
    this.candidates = [];
    this.collected = undefined;
    return true;
  }

  /** The answer kept; throws when none was given (a path that answered without ending). */
  answer(): CollectedAnswer {
    if (!this.collected) throw new Error("the candidates answer never ended");
    return this.collected;
  }
}

/** The second of a [classId, value, classId, value, ...] pair list for `classId` (0 when absent). */
function pairValue(pairs: readonly number[] | undefined, classId: number): number {
  if (!pairs) return 0;
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === classId) return pairs[i + 1];
  return 0;
}
