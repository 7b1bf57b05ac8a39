/**
 * The lengths of the pieces of a candidates answer at one microversion
 * (AnswerLengths), from the very pieces the fast renderer writes
 * (candidate-writer.ts, summaries.ts, pieces.ts), for the upper bound on an
 * answer's bytes (services/candidates/answer-bound.ts). Each piece counts
 * the comma that may follow it, so a count of pieces times their lengths is
 * never short of the text.
 */
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";
import type { AnswerLengths } from "../../services/candidates/answer-bound.js";
import { PLAIN, RESOURCES_OPEN } from "./cache.js";
import {
  ALLOCATIONS_CLOSE_MAPPINGS_OPEN,
  ALLOCATIONS_DICT,
  ALLOCATIONS_LIST,
  ARRAY_OPEN,
  CLOSE_TWO,
  LIST_CLOSE,
  LIST_PROVIDER_OPEN,
  LIST_RESOURCES_OPEN,
} from "./candidate-writer.js";
import { ARRAY_CLOSE, BODY_CLOSE, CLOSE, COMMA, REQUESTS_OPEN, SUMMARIES_OPEN } from "./pieces.js";
import { CAPACITY_OPEN, NULL, RESOURCES_CLOSE_PARENT, RESOURCES_CLOSE_TRAITS_OPEN, ROOT, TRAITS_CLOSE_PARENT, USED_OPEN } from "./summaries.js";

const comma = COMMA.length;

export function answerLengths(shape: AnswerShape, query: CandidatesQuery): AnswerLengths {
  return new PieceLengths(shape, query);
}

/**
 * A class, not an object of arrows: the bound calls these once or more per
 * provider of the cloud, and methods shared by every request keep those
 * call sites as the optimizing compiler left them, where a request's own
 * closures would be new call targets at every request.
 */
class PieceLengths implements AnswerLengths {
  readonly frame = REQUESTS_OPEN.length + SUMMARIES_OPEN.length + BODY_CLOSE.length;
  readonly request: number;
  readonly key: string;
  private readonly dictForm: boolean;
  /** The microversion writes mappings (dict form from 1.34). */
  private readonly mappings: boolean;
  private readonly traits: boolean;
  private readonly tree: boolean;
  private readonly allClasses: boolean;
  private readonly requested: ReadonlySet<string>;
  /** Per class id: its summary piece without the numbers (-1: not shown at this microversion). */
  private readonly classPieces: number[] = [];
  /** Per trait list (the view shares one list between the providers that have the same traits). */
  private readonly traitLists = new Map<readonly string[], number>();
  private readonly summaryEnd: number;

  constructor(shape: AnswerShape, query: CandidatesQuery) {
    this.dictForm = shape.dictForm;
    this.mappings = shape.dictForm && shape.mappings;
    this.traits = shape.traits;
    this.tree = shape.tree;
    this.allClasses = shape.allClasses;
    this.requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
    // Every piece's weight follows from the shape and, below 1.27, which classes the summaries show.
    this.key = JSON.stringify([shape, shape.allClasses ? [] : [...this.requested].sort()]);
    this.request =
      (shape.dictForm
        ? ALLOCATIONS_DICT.length + (shape.mappings ? ALLOCATIONS_CLOSE_MAPPINGS_OPEN.length + CLOSE_TWO.length : CLOSE_TWO.length)
        : ALLOCATIONS_LIST.length + LIST_CLOSE.length) + comma;
    this.summaryEnd = !shape.tree
      ? (shape.traits ? ARRAY_CLOSE : CLOSE).length + CLOSE.length
      : (shape.traits ? TRAITS_CLOSE_PARENT : RESOURCES_CLOSE_PARENT).length + ROOT.length + CLOSE.length;
  }

  allocation(uuidBytes: number): number {
    return this.dictForm
      ? uuidBytes + RESOURCES_OPEN.length + CLOSE_TWO.length + comma
      : LIST_PROVIDER_OPEN.length + uuidBytes + LIST_RESOURCES_OPEN.length + CLOSE_TWO.length + comma;
  }

  resource(className: string, amount: number): number {
    return quotedBytes(className) + 1 + numberBytes(amount) + comma;
  }

  mapping(suffix: string): number {
    return this.mappings ? quotedBytes(suffix) + ARRAY_OPEN.length + ARRAY_CLOSE.length + comma : 0;
  }

  mapped(uuidBytes: number): number {
    return this.mappings ? uuidBytes + comma : 0;
  }

  summary(...[uuidBytes, inventories, traits, parentBytes, rootBytes, classNames]: Parameters<AnswerLengths["summary"]>): number {
    let bytes = uuidBytes + RESOURCES_OPEN.length + this.summaryEnd + comma;
    for (let i = 0; i < inventories.length; i++) {
      const inv = inventories[i];
      const piece = this.classPiece(inv.resourceClassId, classNames);
      if (piece >= 0) bytes += piece + numberBytes(inv.capacity) + numberBytes(inv.used);
    }
    if (this.traits) bytes += RESOURCES_CLOSE_TRAITS_OPEN.length + this.traitsBytes(traits);
    if (this.tree) bytes += (parentBytes ?? NULL.length) + rootBytes;
    return bytes;
  }

  quoted(text: string): number {
    return quotedBytes(text);
  }

  private classPiece(id: number, classNames: ReadonlyMap<number, string>): number {
    let bytes = this.classPieces[id];
    if (bytes === undefined) {
      const name = classNames.get(id) ?? "";
      bytes = this.allClasses || this.requested.has(name) ? quotedBytes(name) + CAPACITY_OPEN.length + USED_OPEN.length + CLOSE.length + comma : -1;
      this.classPieces[id] = bytes;
    }
    return bytes;
  }

  private traitsBytes(traits: readonly string[]): number {
    let bytes = this.traitLists.get(traits);
    if (bytes === undefined) {
      bytes = 0;
      for (const t of traits) bytes += quotedBytes(t) + comma;
      this.traitLists.set(traits, bytes);
    }
    return bytes;
  }
}

/** The bytes of `text` as a JSON string in UTF-8, quotes included. */
export function quotedBytes(text: string): number {
  // Text with anything JSON escapes, or that takes more than a byte in UTF-8, is measured by the encoder.
  return PLAIN.test(text) ? text.length + 2 : Buffer.byteLength(JSON.stringify(text), "utf8");
}

/** The length of a number as the renderers write it (String(n)). */
function numberBytes(n: number): number {
  if (n >= 0 && n < 1e9 && Math.floor(n) === n) {
    let digits = 1;
    for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
    return digits;
  }
  return String(n).length;
}
