/**
 * An upper bound on the bytes of an answer of the general plan over the
 * cloud view's trees, computed from the trees alone, without planning or
 * combining: what lets a bounded answer (PLACEMENT_MAX_ANSWER_BYTES) leave
 * while it is still being found, as an unbounded one does, instead of being
 * held until whole. An answer whose bound is within the answer-size bound
 * can never be refused for its size, so nothing is lost by sending it early
 * (render/candidates/body.ts decides, once the answer is large).
 *
 * The bound counts a superset of the answer: every root as an anchor; per
 * group, every provider of the anchor's tree and of the sharing providers
 * anchoring into it that has an inventory of each of the group's classes,
 * whatever its capacity, traits, aggregates or in_tree; every combination of
 * one option per group, where only group_policy=isolate is applied (among
 * granular groups, one provider each, all distinct), and same_subtree, the
 * capacity that groups share, the deduplication of sharing-only candidates,
 * limit and the pre-1.29 exclusion of nested candidates are not (each only
 * removes candidates); the summaries of every provider of every tree. And it
 * counts each candidate's bytes as if no two of its groups' options named a
 * provider in common: merging them into one entry, with the amounts of one
 * class added, only ever makes the text shorter. The pieces' lengths come
 * from the renderer (AnswerLengths), so this module knows counts, not JSON.
 *
 * The contract suite (test/candidates/contract.test.ts) checks that the
 * bound is never short of an answer the tree view gives over random clouds,
 * and test/candidates/answer-bound.test.ts that it is close on the bench's
 * nested cloud, where every tree answers.
 */
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { TreeMember, ViewTrees } from "./cloud-trees.js";
import type { IdsByName } from "./sql/names.js";
import type { TreeInventory } from "./sql/tree-loads.js";

/**
 * What the pieces of an answer weigh in bytes, each with the comma that may
 * follow it, as the renderers write them at the request's microversion
 * (render/candidates/lengths.ts). Uuids are given as the bytes of their
 * JSON strings (quoted).
 */
export interface AnswerLengths {
  /** Equal for two AnswerLengths that weigh every piece alike (a bound counted with one holds for the other). */
  readonly key: string;
  /** The body with no allocation request and no summary. */
  readonly frame: number;
  /** One allocation request with no allocation and no mapping. */
  readonly request: number;
  /** One provider's entry in a request's allocations, without its resources. */
  allocation(uuidBytes: number): number;
  /** One class and amount in a provider's resources. */
  resource(className: string, amount: number): number;
  /** One group's mapping, without its providers (0 when the microversion has no mappings). */
  mapping(suffix: string): number;
  /** One provider in a group's mapping (0 when the microversion has no mappings). */
  mapped(uuidBytes: number): number;
  /** One provider summary; `parentBytes` null for a root; `classNames` names the inventories' classes. */
  summary(
    uuidBytes: number,
    inventories: readonly TreeInventory[],
    traits: readonly string[],
    parentBytes: number | null,
    rootBytes: number,
    classNames: ReadonlyMap<number, string>,
  ): number;
  /** The bytes of `text` as a JSON string, quotes included. */
  quoted(text: string): number;
}

/** An upper bound on an answer's bytes as `lengths` weighs them; past `over` it may stop counting and return any number above `over`. */
export type AnswerBytesBound = (lengths: AnswerLengths, over: number) => number;

/**
 * The bounds of one query counted over one state of the view, kept in the
 * view's memo of that state (ViewRead.memo), so a query asked again before
 * the view changes is not counted again: a count walks every provider of
 * the cloud. One per weighing of the pieces (AnswerLengths.key): each
 * microversion's shape weighs them differently.
 */
export class CountedBounds {
  private readonly counted = new Map<string, { bytes: number; whole: boolean }>();

  /**
   * The bound `count` gives for `lengths` and `over`, or the one it gave
   * before when that one answers as well: one counted to the end, or one
   * that stopped above `over` (the answer is larger still).
   */
  atMost(lengths: AnswerLengths, over: number, count: AnswerBytesBound): number {
    const known = this.counted.get(lengths.key);
    if (known !== undefined && (known.whole || known.bytes > over)) return known.bytes;
    const bytes = count(lengths, over);
    this.counted.set(lengths.key, { bytes, whole: bytes <= over });
    return bytes;
  }
}

/**
 * What the bound of `query` depends on besides the view's state and the
 * pieces' weights: the requested classes (by id, with their amounts), the
 * groups and their policy, and the names of the classes the summaries show.
 */
export function boundKey(query: CandidatesQuery, names: IdsByName, classNames: ReadonlyMap<number, string>): string {
  const groups = query.groups.map((g) => [g.suffix, g.useSameProvider, [...g.resources].map(([name, amount]) => [names.resourceClasses.get(name), amount])]);
  return JSON.stringify([query.params.groupPolicy === "isolate", groups, [...classNames]]);
}

/**
 * Above this many combinations of the isolated groups' options in one tree,
 * isolate is not applied to that tree's count (a bound still, only looser)
 * rather than the combinations enumerated.
 */
const MAX_ISOLATED_TUPLES = 4096;

/**
 * Above this many classes in a request the bound is not counted (the
 * classes a provider has are one bit each of a 32-bit mask): the answer is
 * then held as any unbounded one.
 */
const MAX_CLASSES = 31;

/** One request group as the bound sees it, with scratch space for the tree being counted. */
interface BoundGroup {
  /** One provider with every class (granular, or resourceless); else one provider per class (the unsuffixed group). */
  single: boolean;
  /** Its options' providers must differ from the other isolated groups' (isolate, granular). */
  isolated: boolean;
  /** Its classes, as bits of the request's classes (ClassSlots), one each and together. */
  bits: number[];
  mask: number;
  /** The `"CLASS":amount` pieces of all its classes. */
  piecesBytes: number;
  mappingBytes: number;
  /** Single groups: each option's provider and bytes in the tree being counted, and how many. */
  optionProviders: number[];
  optionBytes: number[];
  options: number;
  /** Other groups: per class, how many providers have it in the tree being counted. */
  classProviders: number[];
}

const NO_TRAITS: readonly string[] = [];

/**
 * The most bytes the answer of `query` over `trees` can have, as `lengths`
 * weighs them; once the count passes `over` it stops and returns what it
 * has (more than `over`): the caller only asks whether the answer fits.
 * `names` and `classNames` are the request's read of the view.
 */
export function answerBytesAtMost(
  trees: ViewTrees,
  names: IdsByName,
  classNames: ReadonlyMap<number, string>,
  query: CandidatesQuery,
  lengths: AnswerLengths,
  over: number,
): number {
  const isolate = query.params.groupPolicy === "isolate";
  // Each requested class's bit, by class id.
  const bitOf: number[] = [];
  let classes = 0;
  const groups: BoundGroup[] = query.groups.map((g) => {
    const bits: number[] = [];
    let mask = 0;
    let piecesBytes = 0;
    for (const [name, amount] of g.resources) {
      const id = names.resourceClasses.get(name)!;
      if (bitOf[id] === undefined) {
        bitOf[id] = classes < MAX_CLASSES ? 1 << classes : 0;
        classes++;
      }
      bits.push(bitOf[id]);
      mask |= bitOf[id];
      piecesBytes += lengths.resource(classNames.get(id) ?? name, amount);
    }
    return {
      single: g.useSameProvider || bits.length === 0,
      isolated: isolate && g.useSameProvider,
      bits,
      mask,
      piecesBytes,
      mappingBytes: lengths.mapping(g.suffix),
      optionProviders: [],
      optionBytes: [],
      options: 0,
      classProviders: bits.map(() => 0),
    };
  });
  if (classes > MAX_CLASSES) return Number.POSITIVE_INFINITY;
  const isolated = groups.filter((g) => g.isolated);

  let total = lengths.frame;
  // The providers a tree's options may come from (its own, then the sharing ones): their ids, uuids' bytes and requested classes.
  const available: Available = { ids: [], uuidBytes: [], masks: [], count: 0 };
  for (const tree of trees.list) {
    const members = tree.members;
    available.count = 0;
    for (let i = 0; i < members.length; i++) addAvailable(available, members[i], bitOf, lengths);
    const shared = trees.sharingInto(tree.rootId);
    for (let i = 0; i < shared.length; i++) addAvailable(available, shared[i], bitOf, lengths);
    // The summaries of the tree's providers.
    const rootBytes = uuidBytesIn(trees, members, available.uuidBytes, tree.rootId, lengths);
    for (let i = 0; i < members.length; i++) {
      const p = members[i];
      const parentBytes = p.parentId === null ? null : uuidBytesIn(trees, members, available.uuidBytes, p.parentId, lengths);
      const traits = p.details.traits === "" ? NO_TRAITS : (tree.data.traits.get(p.id) ?? NO_TRAITS);
      total += lengths.summary(available.uuidBytes[i], p.inventories, traits, parentBytes, rootBytes, classNames);
    }
    total += treeRequestsBytes(groups, isolated, available, lengths);
    if (total > over) return total;
  }
  return total;
}

/** The providers an anchor tree's options may come from, in parallel lists of which `count` are the tree's. */
interface Available {
  ids: number[];
  uuidBytes: number[];
  /** Which of the request's classes each has an inventory of (a bit each). */
  masks: number[];
  count: number;
}

/** Adds `p` to the providers an anchor tree's options may come from, with the request's classes it has (`bitOf`: each one's bit, by class id). */
function addAvailable(available: Available, p: TreeMember, bitOf: readonly number[], lengths: AnswerLengths): void {
  let mask = 0;
  for (let i = 0; i < p.inventories.length; i++) mask |= bitOf[p.inventories[i].resourceClassId] ?? 0;
  available.ids[available.count] = p.id;
  available.uuidBytes[available.count] = lengths.quoted(p.uuid);
  available.masks[available.count++] = mask;
}

/** The bytes of the requests of one anchor tree whose options come from `available` (see the header). */
function treeRequestsBytes(groups: readonly BoundGroup[], isolated: readonly BoundGroup[], available: Available, lengths: AnswerLengths): number {
  const { ids, uuidBytes, masks, count } = available;
  // Free groups combine with anything: their option counts multiply, and each option's bytes are in every combination of the others'.
  let freeCount = 1;
  let freeBytes = 0;
  let isolatedTuples = 1;
  for (let k = 0; k < groups.length; k++) {
    const g = groups[k];
    let options = 0;
    let bytes = 0;
    if (g.single) {
      for (let i = 0; i < count; i++) {
        if ((masks[i] & g.mask) !== g.mask) continue;
        let b = g.mappingBytes + lengths.mapped(uuidBytes[i]);
        if (g.bits.length > 0) b += lengths.allocation(uuidBytes[i]) + g.piecesBytes;
        g.optionProviders[options] = ids[i];
        g.optionBytes[options++] = b;
        bytes += b;
      }
      g.options = options;
      if (g.isolated) {
        if (options === 0) return 0;
        isolatedTuples *= options;
        continue;
      }
    } else {
      // One provider per class, in every combination: each provider's entry (in the allocations and
      // in the mapping) is in every combination that picks it for at least one class.
      options = 1;
      for (let c = 0; c < g.bits.length; c++) {
        let n = 0;
        for (let i = 0; i < count; i++) if ((masks[i] & g.bits[c]) !== 0) n++;
        g.classProviders[c] = n;
        options *= n;
      }
      if (options > 0) {
        bytes = options * (g.mappingBytes + g.piecesBytes);
        for (let i = 0; i < count; i++) {
          if ((masks[i] & g.mask) === 0) continue;
          let without = 1;
          for (let c = 0; c < g.bits.length; c++) without *= (masks[i] & g.bits[c]) !== 0 ? g.classProviders[c] - 1 : g.classProviders[c];
          bytes += (lengths.allocation(uuidBytes[i]) + lengths.mapped(uuidBytes[i])) * (options - without);
        }
      }
    }
    if (options === 0) return 0;
    freeBytes = freeBytes * options + bytes * freeCount;
    freeCount *= options;
  }

  // The isolated groups: each combination of their options with all providers distinct (or every combination, past the limit).
  let isolatedCount = 1;
  let isolatedBytes = 0;
  if (isolated.length > 0) {
    if (isolatedTuples > MAX_ISOLATED_TUPLES) {
      for (const g of isolated) {
        let sum = 0;
        for (let i = 0; i < g.options; i++) sum += g.optionBytes[i];
        isolatedBytes = isolatedBytes * g.options + sum * isolatedCount;
        isolatedCount *= g.options;
      }
    } else {
      const tally = { count: 0, bytes: 0 };
      tallyDistinct(isolated, 0, [], 0, tally);
      isolatedCount = tally.count;
      isolatedBytes = tally.bytes;
    }
  }
  return isolatedCount * freeCount * lengths.request + isolatedBytes * freeCount + freeBytes * isolatedCount;
}

/** Adds to `tally` the combinations of one option per group from `level` on whose providers differ from `picked` and each other, and their bytes (`sum` so far). */
function tallyDistinct(groups: readonly BoundGroup[], level: number, picked: number[], sum: number, tally: { count: number; bytes: number }): void {
  if (level === groups.length) {
    tally.count++;
    tally.bytes += sum;
    return;
  }
  const g = groups[level];
  for (let i = 0; i < g.options; i++) {
    const p = g.optionProviders[i];
    if (picked.includes(p)) continue;
    picked.push(p);
    tallyDistinct(groups, level + 1, picked, sum + g.optionBytes[i], tally);
    picked.pop();
  }
}

/**
 * The bytes of the uuid of provider `id`, a member of the tree (`members` in
 * id order, their bytes first in `bytes`) as parents and roots are; else
 * found in the other trees (0 when nowhere: there is no uuid to write).
 */
function uuidBytesIn(trees: ViewTrees, members: readonly TreeMember[], bytes: readonly number[], id: number, lengths: AnswerLengths): number {
  let lo = 0;
  let hi = members.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (members[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo < members.length && members[lo].id === id) return bytes[lo];
  const elsewhere = trees.provider(id);
  return elsewhere ? lengths.quoted(elsewhere.uuid) : 0;
}
