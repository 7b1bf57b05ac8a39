/**
 * What candidates answers keep for the answers after them, in one object
 * per app (createApp makes it, its close() releases it):
 * - the uuid arena: each provider's quoted uuid, encoded once and copied
 *   into every answer that names it (UuidArena);
 * - the flat answer's pieces: per provider details object the cloud view
 *   keeps (KeptDetails), its allocation request and its summary as bytes
 *   (flat-body.ts), with the interned strings they are checked against;
 * - the buffer pool the bodies are written in (BodyBuffers).
 *
 * Everything here is a cache: an answer written with an empty one has the
 * same bytes, only slower. The answer-size budget is not here (budget.ts):
 * it counts the bytes of answers being written, which must be exact while
 * they are written, where this keeps memory for reuse and may drop any of
 * it at any time.
 */
import { BodyBuffers } from "../../http/body-buffers.js";
import { ascii, type BodyWriter } from "../../http/body-writer.js";
import type { KeptDetails } from "../../services/candidates/cloud-view.js";
import { IdMap } from "../../services/candidates/id-map.js";

export const RESOURCES_OPEN = ascii(':{"resources":{');

/**
 * The encoded uuids of providers, one slot per provider in one buffer: the
 * uuid as a JSON string, then `:{"resources":{` (with it, an allocation's
 * and a summary's opening). One buffer, not two small ones per provider:
 * over 10,000 nested trees an answer names 40,000 providers, and their
 * pieces as buffers of their own were a hundred thousand objects that the
 * collector marked at every full collection. An arena only grows (its
 * `buffer` is replaced by a larger copy, so slots stay where they are); an
 * answer keeps the arena it started with.
 */
export class UuidArena {
  buffer: Buffer<ArrayBuffer> = Buffer.allocUnsafeSlow(64 * 1024);
  private used = 0;
  private readonly slotOf = new IdMap<number>();
  /** Per slot: where its quoted uuid starts and ends (`:{"resources":{` follows). */
  readonly starts: number[] = [];
  readonly ends: number[] = [];

  /** Providers with a slot. */
  get size(): number {
    return this.starts.length;
  }

  /** The slot holding `uuid` for provider `id` (a new slot when the id's slot spells another uuid). */
  of(id: number, uuid: string): number {
    const kept = this.slotOf.get(id);
    if (kept !== undefined && this.spells(kept, uuid)) return kept;
    const quoted = JSON.stringify(uuid);
    const at = this.used;
    // In bytes: a row written around the API may hold a uuid that is not ASCII.
    const end = at + Buffer.byteLength(quoted);
    if (end + RESOURCES_OPEN.length > this.buffer.length) {
      const larger = Buffer.allocUnsafeSlow(Math.max(this.buffer.length * 2, end + RESOURCES_OPEN.length));
      this.buffer.copy(larger, 0, 0, at);
      this.buffer = larger;
    }
    this.buffer.write(quoted, at, "utf8");
    RESOURCES_OPEN.copy(this.buffer, end);
    this.used = end + RESOURCES_OPEN.length;
    const slot = this.starts.length;
    this.starts.push(at);
    this.ends.push(end);
    this.slotOf.set(id, slot);
    return slot;
  }

  /**
   * Whether the slot's bytes spell `uuid` between its quotes: compared with
   * the bytes rather than with a string kept per slot, which was one more
   * string per provider for the collector to mark (50,000 over 10,000 nested trees).
   * A uuid that is not ASCII never matches (its bytes outnumber its characters): it gets a new slot.
   */
  private spells(slot: number, uuid: string): boolean {
    const start = this.starts[slot] + 1;
    if (this.ends[slot] - 1 - start !== uuid.length) return false;
    const bytes = this.buffer;
    for (let i = 0; i < uuid.length; i++) if (bytes[start + i] !== uuid.charCodeAt(i)) return false;
    return true;
  }
}

/** Writes the provider's quoted uuid, from its slot. */
export const writeQuoted = (w: BodyWriter, arena: UuidArena, slot: number): BodyWriter => w.range(arena.buffer, arena.starts[slot], arena.ends[slot]);
/** Writes `"UUID":{"resources":{`, from its slot. */
export const writeResourcesOpen = (w: BodyWriter, arena: UuidArena, slot: number): BodyWriter =>
  w.range(arena.buffer, arena.starts[slot], arena.ends[slot] + RESOURCES_OPEN.length);

/**
 * Past this many providers, the next answer starts a new arena (deleted
 * providers' slots go too): a slot is some 50 bytes of buffer and two
 * numbers, so this bounds an arena near 10 MB and still holds every
 * provider of an answer over 10,000 nested trees.
 */
const MAX_KEPT_PROVIDERS = 65_536;

/** A provider's pieces in flat answers (flat-body.ts), kept on its details object. */
export interface FlatProvider {
  /** Which class names the pieces spell (a kept string of RenderCache.canonical). */
  naming: string;
  /** Its uuid and trait names can be written between quotes as they are (see PLAIN). */
  plain: boolean;
  /** Its allocation request for the last request template it was written with. */
  request?: { template: string; bytes: Buffer };
  /** Its summary for the last summary form, with the usage it was written with (the cloud view replaces `used` when the usage changes). */
  summary?: { form: string; used: readonly number[] | undefined; bytes: Buffer };
}

/** Printable ASCII but the quote and the backslash: text JSON writes between quotes as it is, one byte a character. */
export const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * Interned strings and plain namings are a handful in practice; past this
 * many, the map is emptied, so it cannot grow without end.
 */
const MAX_KEPT_TEXTS = 256;

export class RenderCache {
  /** The buffers bodies are written in, given back once their response is sent. */
  readonly buffers = new BodyBuffers();
  private currentArena?: UuidArena;
  /**
   * Pieces per details object: entries go with the objects, which the cloud
   * view replaces when a provider's capacities or traits change (KeptDetails,
   * a type only the view makes, is what makes keying on identity exact).
   */
  private flatProviders = new WeakMap<KeptDetails, FlatProvider>();
  /**
   * One string object per distinct naming, template and form, so checking
   * each provider's kept pieces against them compares pointers: equal
   * strings made afresh for every request were compared character by
   * character, three times per provider per answer.
   */
  private readonly texts = new Map<string, string>();
  /** Whether each kept naming's class names are PLAIN (the keys are the kept strings of `texts`). */
  private readonly plainNamings = new Map<string, boolean>();

  /**
   * The arena an answer writes its uuids from, to its end. Provider ids are
   * never reused, yet a kept slot is checked against the answer's own uuid
   * for the id, so it can never spell another provider's.
   */
  arena(): UuidArena {
    if (this.currentArena === undefined || this.currentArena.size > MAX_KEPT_PROVIDERS) this.currentArena = new UuidArena();
    return this.currentArena;
  }

  /** The kept string equal to `text` (itself the first time). */
  canonical(text: string): string {
    let kept = this.texts.get(text);
    if (kept === undefined) {
      if (this.texts.size >= MAX_KEPT_TEXTS) this.texts.clear();
      this.texts.set(text, (kept = text));
    }
    return kept;
  }

  /** Whether the class names of `naming` (a kept string) are PLAIN. */
  plainNaming(naming: string, classNames: Map<number, string>): boolean {
    let plain = this.plainNamings.get(naming);
    if (plain === undefined) {
      if (this.plainNamings.size >= MAX_KEPT_TEXTS) this.plainNamings.clear();
      this.plainNamings.set(naming, (plain = [...classNames.values()].every((name) => PLAIN.test(name))));
    }
    return plain;
  }

  /** The flat pieces of a provider's details under `naming`: those kept, or new empty ones. */
  flatProvider(details: KeptDetails, naming: string): FlatProvider {
    const kept = this.flatProviders.get(details);
    if (kept && kept.naming === naming) return kept;
    const made: FlatProvider = { naming, plain: PLAIN.test(details.uuid) && PLAIN.test(details.traits) };
    this.flatProviders.set(details, made);
    return made;
  }

  /**
   * Drops everything kept: the free buffers, the arena, the pieces. An
   * answer still being written keeps what it already holds, and its buffers
   * are not taken back; an answer started after this starts from empty.
   */
  close(): void {
    this.buffers.close();
    this.currentArena = undefined;
    this.flatProviders = new WeakMap();
    this.texts.clear();
    this.plainNamings.clear();
  }
}
