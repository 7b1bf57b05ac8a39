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
import type { TreeInventory } from "../../services/candidates/sql/tree-loads.js";
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
  const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  // Per class id: its summary piece without the numbers (-1: not shown at this microversion).
  const classPieces: number[] = [];
  const classPiece = (id: number, className: (id: number) => string): number => {
    let bytes = classPieces[id];
    if (bytes === undefined) {
      const name = className(id);
      bytes = shape.allClasses || requested.has(name) ? quotedBytes(name) + CAPACITY_OPEN.length + USED_OPEN.length + CLOSE.length + comma : -1;
      classPieces[id] = bytes;
    }
    return bytes;
  };
  // Per trait list (the view shares one list between the providers that have the same traits).
  const traitLists = new Map<readonly string[], number>();
  const traitsBytes = (traits: readonly string[]): number => {
    let bytes = traitLists.get(traits);
    if (bytes === undefined) {
      bytes = 0;
      for (const t of traits) bytes += quotedBytes(t) + comma;
      traitLists.set(traits, bytes);
    }
    return bytes;
  };
  const summaryEnd = !shape.tree
    ? (shape.traits ? ARRAY_CLOSE : CLOSE).length + CLOSE.length
    : (shape.traits ? TRAITS_CLOSE_PARENT : RESOURCES_CLOSE_PARENT).length + ROOT.length + CLOSE.length;

  return {
    frame: REQUESTS_OPEN.length + SUMMARIES_OPEN.length + BODY_CLOSE.length,
    request:
      (shape.dictForm
        ? ALLOCATIONS_DICT.length + (shape.mappings ? ALLOCATIONS_CLOSE_MAPPINGS_OPEN.length + CLOSE_TWO.length : CLOSE_TWO.length)
        : ALLOCATIONS_LIST.length + LIST_CLOSE.length) + comma,
    allocation: shape.dictForm
      ? (uuidBytes) => uuidBytes + RESOURCES_OPEN.length + CLOSE_TWO.length + comma
      : (uuidBytes) => LIST_PROVIDER_OPEN.length + uuidBytes + LIST_RESOURCES_OPEN.length + CLOSE_TWO.length + comma,
    resource: (name, amount) => quotedBytes(name) + 1 + numberBytes(amount) + comma,
    mapping: (suffix) => (shape.dictForm && shape.mappings ? quotedBytes(suffix) + ARRAY_OPEN.length + ARRAY_CLOSE.length + comma : 0),
    mapped: (uuidBytes) => (shape.dictForm && shape.mappings ? uuidBytes + comma : 0),
    summary: (uuidBytes, inventories: readonly TreeInventory[], traits, parentBytes, rootBytes, className) => {
      let bytes = uuidBytes + RESOURCES_OPEN.length + summaryEnd + comma;
      for (let i = 0; i < inventories.length; i++) {
        const inv = inventories[i];
        const piece = classPiece(inv.resourceClassId, className);
        if (piece >= 0) bytes += piece + numberBytes(inv.capacity) + numberBytes(inv.used);
      }
      if (shape.traits) bytes += RESOURCES_CLOSE_TRAITS_OPEN.length + traitsBytes(traits);
      if (shape.tree) bytes += (parentBytes ?? NULL.length) + rootBytes;
      return bytes;
    },
    quoted: quotedBytes,
  };
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
