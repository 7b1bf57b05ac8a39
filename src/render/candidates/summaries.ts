/**
 * Provider summaries as bytes, the one writer of them for every answer: the
 * engine's (its result's summaries, in its order) and the flat answer's (one
 * per anchor, written here the first time and then copied whole from the
 * render cache while the provider and its usage stay the same:
 * flat-body.ts).
 *
 * What repeats is encoded once per answer: class names and trait names as
 * JSON strings, and `"CLASS":{"capacity":N,"used":` per class and capacity
 * (trees of one cloud repeat a handful of capacities); uuids come from the
 * render cache's arena, a summary's opening (`"UUID":{"resources":{`) with
 * them. Constant punctuation is one piece where it meets.
 */
import { ascii, type BodyWriter } from "../../http/body-writer.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";
import { writeQuoted, writeResourcesOpen, type UuidArena } from "./cache.js";
import { ARRAY_CLOSE, CLOSE, COMMA } from "./pieces.js";

/** One inventory of a summary: its class, capacity and usage. */
export interface SummaryInventory {
  readonly resourceClassId: number;
  readonly capacity: number;
  readonly used: number;
}

export const ZERO = ascii("0");
export const RESOURCES_CLOSE_TRAITS_OPEN = ascii('},"traits":[');
export const TRAITS_CLOSE_PARENT = ascii('],"parent_provider_uuid":');
export const RESOURCES_CLOSE_PARENT = ascii('},"parent_provider_uuid":');
export const ROOT = ascii(',"root_provider_uuid":');
export const NULL = ascii("null");
/** Around a capacity in a summary's inventory: `"CLASS":{"capacity":N,"used":`. */
export const CAPACITY_OPEN = ':{"capacity":';
export const USED_OPEN = ',"used":';

/** Writes the provider summaries of one answer (one writer per answer: what it encodes is named by that answer). */
export class SummaryWriter {
  /** Before 1.27 a summary shows only the requested classes. */
  private readonly requested: ReadonlySet<string>;
  private readonly quotedNames = new Map<string, Buffer>();
  /** `"CLASS":{"capacity":N,"used":` per class id and capacity. */
  private readonly capacityPieces = new Map<number, Map<number, Buffer>>();

  constructor(
    private readonly shape: AnswerShape,
    query: CandidatesQuery,
    private readonly arena: UuidArena,
  ) {
    this.requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  }

  /**
   * One summary, `"UUID":{"resources":{...},...}`: the provider's uuid is its
   * arena slot; inventories in class id order, with their class names from
   * `className`; `parentSlot` null for a root.
   */
  write(
    w: BodyWriter,
    slot: number,
    inventories: readonly SummaryInventory[],
    traits: readonly string[],
    parentSlot: number | null,
    rootSlot: number,
    className: (id: number) => string,
  ): void {
    const { shape, arena } = this;
    writeResourcesOpen(w, arena, slot);
    let first = true;
    for (const inv of inventories) {
      const name = className(inv.resourceClassId);
      if (!shape.allClasses && !this.requested.has(name)) continue;
      if (!first) w.bytes(COMMA);
      first = false;
      let byCapacity = this.capacityPieces.get(inv.resourceClassId);
      if (byCapacity === undefined) this.capacityPieces.set(inv.resourceClassId, (byCapacity = new Map()));
      let piece = byCapacity.get(inv.capacity);
      if (piece === undefined) byCapacity.set(inv.capacity, (piece = Buffer.concat([this.quoted(name), ascii(`${CAPACITY_OPEN}${inv.capacity}${USED_OPEN}`)])));
      w.bytes(piece);
      if (inv.used === 0) w.bytes(ZERO);
      else w.ascii(String(inv.used));
      w.bytes(CLOSE);
    }
    if (shape.traits) {
      w.bytes(RESOURCES_CLOSE_TRAITS_OPEN);
      for (let i = 0; i < traits.length; i++) {
        if (i > 0) w.bytes(COMMA);
        w.bytes(this.quoted(traits[i]));
      }
    }
    if (!shape.tree) {
      w.bytes(shape.traits ? ARRAY_CLOSE : CLOSE).bytes(CLOSE);
      return;
    }
    w.bytes(shape.traits ? TRAITS_CLOSE_PARENT : RESOURCES_CLOSE_PARENT);
    if (parentSlot === null) w.bytes(NULL);
    else writeQuoted(w, arena, parentSlot);
    writeQuoted(w.bytes(ROOT), arena, rootSlot).bytes(CLOSE);
  }

  /** A name as a JSON string, in UTF-8. */
  private quoted(text: string): Buffer {
    let q = this.quotedNames.get(text);
    if (q === undefined) this.quotedNames.set(text, (q = Buffer.from(JSON.stringify(text), "utf8")));
    return q;
  }
}
