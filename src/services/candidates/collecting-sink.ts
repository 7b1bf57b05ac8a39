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
import { classRequests, type FlatAnswer } from "./flat-answer.js";
import type { CandidatesResult, NamesById } from "./generate.js";
import type { CandidatesSink } from "./paths/path.js";

/** Capacity and usage of one inventory as the answer read it. */
export interface InventoryRoom {
  providerId: number;
  resourceClassId: number;
  capacity: number;
  used: number;
}

export interface CollectedAnswer extends NamesById {
  /** In the answer's order. */
  candidates: Candidate[];
  /** At least every inventory the candidates take from. */
  rooms: InventoryRoom[];
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
    this.collected = {
      candidates: this.candidates,
      rooms: result.summaries.flatMap((s) => s.inventories),
      uuidOf: result.uuidOf,
      resourceClassName: result.resourceClassName,
    };
  }

  /** A flat answer's anchors as candidates: each provider takes every group's resources (amounts of one class summed, as the merge does). */
  flat(answer: FlatAnswer): void {
    const classIds = answer.names.resourceClasses;
    const sums = [...classRequests(this.query.groups)].map(([name, r]) => ({ classId: classIds.get(name)!, amount: r.sum }));
    const single = this.query.groups.length === 1;
    const uuids = new Map<number, string>();
    const rooms: InventoryRoom[] = [];
    for (const a of answer.anchors) {
      uuids.set(a.id, a.details.uuid);
      const resources = sums.map((s) => ({ providerId: a.id, resourceClassId: s.classId, amount: s.amount }));
      const providers = [a.id];
      this.candidates.push({
        anchorRootId: a.id,
        resources,
        // One group's resources are the candidate's (a thousand-host answer makes a thousand of each).
        groups: this.query.groups.map((g) => ({
          suffix: g.suffix,
          sameProvider: g.useSameProvider,
          resources: single ? resources : [...g.resources].map(([name, amount]) => ({ providerId: a.id, resourceClassId: classIds.get(name)!, amount })),
          providers,
        })),
      });
      for (const s of sums) rooms.push({ providerId: a.id, resourceClassId: s.classId, capacity: pairValue(a.details.inventories, s.classId), used: pairValue(a.used, s.classId) });
    }
    this.collected = {
      candidates: this.candidates,
      rooms,
      uuidOf: (id) => uuids.get(id)!,
      resourceClassName: (id) => answer.classNames.get(id)!,
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
