/**
 * Writes the engine's allocation requests straight into the body as bytes
 * (see BodyWriter), without intermediate strings or objects.
 *
 * What repeats is encoded once: each provider's uuid pieces (across
 * answers, in the render cache's arena: cache.ts), each `"CLASS":amount` and each suffix's key
 * (per answer; encoding them for every candidate was most of the writing
 * time in CPU profiles). And what repeats within a tree is written once
 * per tree: a tree's candidates are the product of its groups' options, so
 * each option is in several candidates (a nested tree with two NUMA nodes
 * and two devices gives each option to two or four of its eight
 * candidates). When no two groups of a candidate take from the same
 * provider, its allocations are its options' own providers in group order,
 * so each option's part (`"UUID":{"resources":{...}}` for each of its
 * providers) and its mapping (`"SUFFIX":["UUID"]`), with the punctuation
 * around them, are written once and copied whole: seven pieces for a
 * candidate of three groups instead of some forty.
 */
import { ascii, type BodyWriter } from "../../http/body-writer.js";
import type { Candidate, GroupOption, ResourceRequest } from "../../services/candidates/combine.js";
import type { NamesById } from "../../services/candidates/generate.js";
import { writeQuoted, writeResourcesOpen, type UuidArena } from "./cache.js";
import { ARRAY_CLOSE, COMMA } from "./pieces.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";

/** The encoded uuid of a provider of the answer being written: its slot in the answer's arena. */
export type UuidPieces = (names: NamesById, id: number) => number;

export const ALLOCATIONS_DICT = ascii('{"allocations":{');
export const ALLOCATIONS_LIST = ascii('{"allocations":[');
export const LIST_PROVIDER_OPEN = ascii('{"resource_provider":{"uuid":');
export const LIST_RESOURCES_OPEN = ascii('},"resources":{');
export const ALLOCATIONS_CLOSE_MAPPINGS_OPEN = ascii('},"mappings":{');
export const CLOSE_TWO = ascii("}}");
export const LIST_CLOSE = ascii("]}");
export const ARRAY_OPEN = ascii(":[");

export function candidateWriter(w: BodyWriter, shape: AnswerShape, arena: UuidArena, uuid: UuidPieces): (cand: Candidate, names: NamesById) => void {
  // `"NAME":amount` per class and amount (amounts repeat across candidates; String() of each made garbage).
  const classAmount = new Map<number, Map<number, Buffer>>();
  const suffixKey = new Map<string, Buffer>();
  // Reused with a count of its own: setting an array's length to 0 drops its storage, so every
  // candidate would allocate it again.
  const providers: number[] = [];
  // Each option's written parts, for the options of the tree being written (options belong to one
  // anchor tree: kept per tree, they are a handful).
  const pieces = new OptionPieces();
  let tree = -1;

  /** The providers of `resources` in order of first appearance, each with its classes, separated by commas. */
  const writeProviders = (out: BodyWriter, resources: readonly ResourceRequest[], names: NamesById): void => {
    // A candidate names a handful of providers: a scan beats a Map.
    let count = 0;
    for (const rr of resources) {
      let i = 0;
      while (i < count && providers[i] !== rr.providerId) i++;
      if (i === count) providers[count++] = rr.providerId;
    }
    for (let i = 0; i < count; i++) {
      const p = providers[i];
      if (i > 0) out.bytes(COMMA);
      const slot = uuid(names, p);
      if (shape.dictForm) writeResourcesOpen(out, arena, slot);
      else writeQuoted(out.bytes(LIST_PROVIDER_OPEN), arena, slot).bytes(LIST_RESOURCES_OPEN);
      let first = true;
      for (const rr of resources) {
        if (rr.providerId !== p) continue;
        if (!first) out.bytes(COMMA);
        first = false;
        let byAmount = classAmount.get(rr.resourceClassId);
        if (byAmount === undefined) classAmount.set(rr.resourceClassId, (byAmount = new Map()));
        let piece = byAmount.get(rr.amount);
        if (piece === undefined) byAmount.set(rr.amount, (piece = Buffer.from(`${JSON.stringify(names.resourceClassName(rr.resourceClassId))}:${rr.amount}`, "utf8")));
        out.bytes(piece);
      }
      out.bytes(CLOSE_TWO);
    }
  };

  const writeMapping = (out: BodyWriter, option: GroupOption, names: NamesById): void => {
    let key = suffixKey.get(option.suffix);
    if (key === undefined) suffixKey.set(option.suffix, (key = Buffer.concat([Buffer.from(JSON.stringify(option.suffix), "utf8"), ARRAY_OPEN])));
    out.bytes(key);
    for (let i = 0; i < option.providers.length; i++) {
      if (i > 0) out.bytes(COMMA);
      writeQuoted(out, arena, uuid(names, option.providers[i]));
    }
    out.bytes(ARRAY_CLOSE);
  };

  // An option's allocations or mapping, with the punctuation before and after it (the same wherever the
  // option is: an option belongs to one group, at one place in the request): written in place the first
  // time; after, the bytes written then are copied again in one piece (where they sit in their chunk:
  // the writer never reuses a chunk while it writes). Not kept when they fell across two chunks, nor past
  // the first MAX_KEPT_OPTIONS options of a tree.
  const writeOptionPart = (option: GroupOption, names: NamesById, mapping: boolean, before: Buffer | undefined, after: Buffer | undefined): void => {
    const i = pieces.indexOf(option);
    const kept = mapping ? pieces.mappings : pieces.allocations;
    const seen = i < 0 ? undefined : kept.chunks[i];
    if (seen !== undefined) {
      w.range(seen, kept.starts[i], kept.ends[i]);
      return;
    }
    const chunk = w.chunk;
    const start = w.offset;
    if (before !== undefined) w.bytes(before);
    if (mapping) writeMapping(w, option, names);
    else writeProviders(w, option.resources, names);
    if (after !== undefined) w.bytes(after);
    if (i >= 0 && w.chunk === chunk) {
      kept.chunks[i] = chunk;
      kept.starts[i] = start;
      kept.ends[i] = w.offset;
    }
  };

  return (cand, names) => {
    // A single group's option is in this one candidate only: nothing to reuse.
    const reuse = cand.groups.length > 1;
    if (reuse && cand.anchorRootId !== tree) {
      tree = cand.anchorRootId;
      pieces.clear();
    }
    w.bytes(shape.dictForm ? ALLOCATIONS_DICT : ALLOCATIONS_LIST);
    if (reuse && ownProviders(cand.groups)) {
      let first = true;
      for (const option of cand.groups) {
        if (option.resources.length === 0) continue;
        writeOptionPart(option, names, false, first ? undefined : COMMA, undefined);
        first = false;
      }
    } else writeProviders(w, cand.resources, names);
    if (!shape.dictForm) {
      w.bytes(LIST_CLOSE);
      return;
    }
    if (!shape.mappings) {
      w.bytes(CLOSE_TWO);
      return;
    }
    if (!reuse) {
      // One group (no comma between mappings).
      w.bytes(ALLOCATIONS_CLOSE_MAPPINGS_OPEN);
      for (const option of cand.groups) writeMapping(w, option, names);
      w.bytes(CLOSE_TWO);
      return;
    }
    const last = cand.groups.length - 1;
    for (let g = 0; g <= last; g++) {
      writeOptionPart(cand.groups[g], names, true, g === 0 ? ALLOCATIONS_CLOSE_MAPPINGS_OPEN : COMMA, g === last ? CLOSE_TWO : undefined);
    }
  };
}

/**
 * True when no two of the options take from the same provider: then the
 * candidate's resources are the options' resources in group order, nothing
 * summed (Candidate), and its providers in order of first appearance are
 * each option's in turn.
 */
function ownProviders(options: readonly GroupOption[]): boolean {
  for (let a = 1; a < options.length; a++) {
    const later = options[a].resources;
    for (let i = 0; i < later.length; i++) {
      const provider = later[i].providerId;
      for (let b = 0; b < a; b++) {
        const earlier = options[b].resources;
        for (let j = 0; j < earlier.length; j++) if (earlier[j].providerId === provider) return false;
      }
    }
  }
  return true;
}

/**
 * Options of one tree whose parts OptionPieces keeps: a tree of many options
 * (dozens of devices) is written piece by piece past them rather than scanned.
 */
const MAX_KEPT_OPTIONS = 32;

/** Where each kept part was written: its chunk (undefined while not kept) and its bytes' range in it. */
interface KeptParts {
  chunks: Array<Buffer<ArrayBuffer> | undefined>;
  starts: number[];
  ends: number[];
}

/**
 * The written parts of the options of one tree: a handful, so a scan of
 * parallel arrays, emptied by a count (a Map's clear allocates its table
 * again, once per tree).
 */
class OptionPieces {
  private readonly options: GroupOption[] = [];
  private count = 0;
  readonly allocations: KeptParts = { chunks: [], starts: [], ends: [] };
  readonly mappings: KeptParts = { chunks: [], starts: [], ends: [] };

  /** The option's slot, made empty when new; -1 when the tree has too many options to keep another. */
  indexOf(option: GroupOption): number {
    let i = 0;
    while (i < this.count && this.options[i] !== option) i++;
    if (i === this.count) {
      if (i === MAX_KEPT_OPTIONS) return -1;
      this.options[i] = option;
      this.allocations.chunks[i] = undefined;
      this.mappings.chunks[i] = undefined;
      this.count++;
    }
    return i;
  }

  clear(): void {
    this.count = 0;
  }
}
