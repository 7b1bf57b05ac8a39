/**
 * The cloud kept in memory and brought up to date at every request from the
 * change feed, so candidates are found in the server instead of by reads of
 * every inventory row in PostgreSQL at every request: on a flat cloud by one
 * pass over its providers (flat-answer.ts), on a cloud with trees or sharing
 * providers by the general plan over its trees (cloud-trees.ts,
 * view-tree-reads.ts). Those reads were most of the time of a large flat
 * answer, and on a nested one they kept the engine waiting for each batch.
 *
 * Why the copy is exact: the change feed (drizzle/0010) gives every committed
 * transaction that touched a provider, its inventories (and their `used`,
 * which every allocation moves), its traits or its aggregates a `seq` in
 * commit order, such that a snapshot that sees seq S sees every seq below it
 * and no change above it. Each request runs one statement, so one snapshot:
 * the names it asks about, the highest seq S' that snapshot sees, and the
 * current rows of every provider changed after the copy's seq S (or of every
 * provider, the first time). Applying them brings the copy to the state at
 * S', as fresh as the request's own snapshot: a client that reads after its
 * write committed sees it, as with any other read. The request's `use` runs
 * right after, with no await between, so it sees one consistent state (and
 * the trees it is given are never changed after, cloud-trees.ts). Several
 * requests may be in flight: one whose snapshot is older than the copy
 * applies nothing and answers from the copy, which is fresher.
 *
 * The copy starts again from a full read when the feed cannot say what
 * changed: rows past the copy's seq were pruned (provider_changes_horizon),
 * the highest seq went back or the server started at another time (a restore
 * or a failover to a standby that did not have every commit). It is also
 * read whole every FULL_READ_EVERY_MS, which bounds how long a write that
 * bypassed the feed's triggers (session_replication_role = replica, a
 * TRUNCATE of a table other than allocations) can stay unseen. A cloud of
 * more than `maxProviders` providers (`maxTreeProviders` when it has trees or
 * sharing providers) is not copied (the server's heap is bounded): the
 * engine answers it from the database, and the count is looked
 * at again only at the next full read's time.
 * A statement that fails leaves the copy as it was.
 *
 * Concurrent requests share delta reads: a request that arrives while a
 * delta read for the same names (the statement's parameters) is in flight
 * does not start its own, nor is it served by that one, whose snapshot may
 * predate a commit the request must see (its client's own write, say). It
 * waits for the next delta read for those names, which starts when the one
 * in flight ends and is shared by every request that arrived meanwhile: its
 * statement starts after each of them arrived, so its snapshot sees every
 * commit that any of them must see, which is the freshness promised above.
 * The delta is applied once, by the shared read; each request then runs its
 * `use` on the copy as one that read alone would (the copy may be fresher by
 * then, never older). However many requests ask, a set of names has at most
 * one delta read in flight and one waiting: requests that arrive together
 * cost at most two statements, not one each. A shared read that finds
 * the feed cannot say what changed, or the copy missing or due for a full
 * read, sends each of its requests on to the full read as it would have gone
 * alone; a shared statement that fails fails each request that waited for
 * it.
 *
 * One full read runs at a time: each holds a whole cloud's rows and builds a
 * copy of it, and at 100,000 providers sixteen of them at once are more than
 * a worker's heap. While one is in flight, the copy it replaces still counts
 * as current (requests bring it up to date from the feed as before, so a
 * periodic full read does not hold anyone up); a request with no copy to
 * read waits for the full read in flight and then reads again, as it would
 * on arrival, from the copy that read made (its delta read starts after the
 * request arrived, so it is as fresh as the request needs). So does a
 * request that finds the copy replaced by a current one while it read. It
 * reads again at most twice, then reads whole on its own, so a run of
 * failing full reads cannot hold it up for ever.
 */
import { setImmediate as turn } from "node:timers/promises";
import { poolOf, type Db } from "../../db/database.js";
import { namedText } from "../../db/prepared.js";
import { isFlat, SHARING_TRAIT } from "./cloud-shape.js";
import { TreeIndex, type ViewTrees } from "./cloud-trees.js";
import { readInventory, Words } from "./sql/inventory-text.js";
import type { IdsByName } from "./sql/names.js";
import type { TreeInventory } from "./sql/tree-loads.js";
import { DELTA_TEXT, FULL_TEXT, readRows, type ProviderRow, type Rows } from "./sql/view-reads.js";

/** The part of a provider's summary that changes only when its inventories or traits do. */
export interface ProviderDetails {
  uuid: string;
  /** Resource class id and capacity of each inventory in turn, in class id order (one array: the copy keeps one per provider). */
  inventories: readonly number[];
  /** Trait names in id order, space-separated (trait names are [A-Z0-9_]+). */
  traits: string;
}

declare const keptByTheView: unique symbol;
/**
 * A provider's details as the view keeps them: one object for as long as
 * they stay equal, a new one when they change (providerOf, the only maker).
 * Renderers key what they encode from a provider on this object
 * (render/candidates/flat-body.ts), which is exact only under that promise;
 * the type says a value comes from the view.
 */
export type KeptDetails = ProviderDetails & { readonly [keptByTheView]: true };

/** A provider of the copy; replaced whole when it changes (never edited: requests keep it across awaits). */
export interface ViewProvider {
  id: number;
  uuid: string;
  parentId: number | null;
  /** 0 when the row has none. */
  rootId: number;
  /** Kept as the same object while it stays equal, so renderers can key on it. */
  details: KeptDetails;
  /** In class id order. */
  inventories: TreeInventory[];
  /** Non-zero usage as [classId, used, ...] (undefined when none). */
  used: readonly number[] | undefined;
  traits: ReadonlySet<number>;
  aggregates: ReadonlySet<number>;
  /** Shares its inventory through aggregates: the cloud is then not flat (nor with a parent). */
  shares: boolean;
}

/** What a request sees: its names and the cloud, as a list of providers when it is flat, else as trees. */
export interface ViewRead {
  names: IdsByName;
  classNames: Map<number, string>;
  /** No provider has a parent or shares (cloud-shape.ts). */
  flat: boolean;
  /** Every provider in id order when the cloud is flat; empty otherwise. */
  providers: readonly ViewProvider[];
  /** The cloud's trees, flat or not (made on first use after a change; call it in `use`, whose state it is). */
  trees(): ViewTrees;
  byUuid: ReadonlyMap<string, ViewProvider>;
  /**
   * What `make` gives for `key` over the copy as it is now: made once and
   * kept until the copy next changes (call it in `use`). For a result that
   * depends only on the copy and on what `key` says (paths/tree-view.ts keeps
   * a query's answer bounds so); the caller must not change what it gets.
   */
  memo<T>(key: string, make: () => T): T;
  /**
   * As memo, for a result kept across states of the copy: one made over an
   * earlier state is given to `update` with the ids of the providers put or
   * removed since (and a lookup of the providers as they are now), when the
   * copy still knows them all; `update` answers the result over the copy as
   * it is, or undefined to have `make` make it again (so does a copy that
   * no longer knows every change). For a result that follows from each
   * provider on its own (flat-answer.ts keeps its pass so); the caller must
   * not change what it gets.
   */
  evolve<T>(key: string, make: () => T, update: EvolveUpdate<T>): T;
}

/** ViewRead.evolve's update: `kept` over the copy as it is now, from the ids changed since and the providers now; undefined to make it again. */
export type EvolveUpdate<T> = (kept: T, changed: ReadonlySet<number>, get: (id: number) => ViewProvider | undefined) => T | undefined;

/** Names a request asks about (looked up in the same statement). */
export interface ViewNames {
  traits: string[];
  aggregates: string[];
}

export interface CloudViewOptions {
  /** A copy older than this is read whole again (see the header). */
  fullReadEveryMs?: number;
  /** Above this many providers a flat cloud is not copied (see the header). */
  maxProviders?: number;
  /** Above this many providers a cloud with trees or sharing providers is not copied. */
  maxTreeProviders?: number;
  /** Tests only: what building a copy awaits between slices of its providers and trees (a turn of the event loop). */
  between?: () => Promise<void>;
}

/**
 * A copy is built from a full read this many providers (and a fifth as many
 * trees) at a time, with a turn of the event loop between slices: built in
 * one piece, the 50,200 providers of 10,000 nested trees held the event loop
 * for half a second, and every other request with it.
 */
const PROVIDERS_PER_TURN = 5000;

const FULL_READ_EVERY_MS = 5 * 60_000;

/** The two statements, each asking its pool for a readable name. */
const DELTA = namedText("ac_view_delta", DELTA_TEXT);
const FULL = namedText("ac_view_full", FULL_TEXT);
/**
 * A flat provider with three inventories takes about 1.2 KB of the copy
 * (heap snapshots of 10,000 providers), so the largest flat copy is about
 * 120 MB.
 */
const MAX_PROVIDERS = 100_000;
/**
 * A provider of a nested cloud takes about 0.9 KB of the copy with its tree
 * (heap snapshots: 65 MB with the copy of the 50,200 providers of 10,000
 * nested trees, 22 MB with a small flat one). The answers over such a cloud are the
 * heap's other large tenant (a tree's candidates are the product of its
 * groups' options: 80,000 of them over 10,000 trees, against one per flat
 * provider), so the copy is bounded lower than a flat one: over those
 * 10,000 trees the server's peak resident memory was about 200 MB during
 * the 80,000-candidate answer, under the 256 MB its heap is set up for
 * (docs/memory.md).
 */
const MAX_TREE_PROVIDERS = 60_000;

/** One full copy and the seq it is at. */
class Copy {
  private readonly byId = new Map<number, ViewProvider>();
  readonly byUuid = new Map<string, ViewProvider>();
  /** Every provider in id order, and each one's place in it (undefined until asked for again after an addition or removal). */
  private ordered: { list: ViewProvider[]; at: Map<number, number> } | undefined;
  /** Providers with a parent, and sharing ones: the cloud is flat when both are 0. */
  trees = 0;
  sharing = 0;
  /** Made at the first request for trees, then kept up to date. */
  private treeIndex: TreeIndex | undefined;
  /** The copy's trait and aggregate sets, one per distinct set (see internedSet). */
  readonly sets = new Map<string, ReadonlySet<number>>();

  readonly readAt = Date.now();
  /** ViewRead.memo's results over the copy as it is; emptied whenever it changes. */
  private readonly memos = new Map<string, unknown>();
  /** Counts the changes (puts and removals) made to the copy; the ids changed, the newest last (at least the last CHANGES_KEPT). */
  private version = 0;
  private readonly changes: Array<{ version: number; id: number }> = [];
  /** ViewRead.evolve's results, each with the version it is of. */
  private readonly evolving = new Map<string, { version: number; value: unknown }>();

  constructor(
    public seq: number,
    readonly started: string,
  ) {}

  get(id: number): ViewProvider | undefined {
    return this.byId.get(id);
  }

  put(p: ViewProvider): void {
    this.changed(p.id);
    const old = this.byId.get(p.id);
    if (old) this.forget(old);
    this.byId.set(p.id, p);
    this.byUuid.set(p.uuid, p);
    if (p.parentId !== null) this.trees++;
    if (p.shares) this.sharing++;
    this.treeIndex?.added(p);
    const at = this.ordered?.at.get(p.id);
    if (at !== undefined) this.ordered!.list[at] = p;
    else this.ordered = undefined;
  }

  remove(id: number): void {
    const old = this.byId.get(id);
    if (!old) return;
    this.changed(id);
    this.forget(old);
    this.byId.delete(id);
    this.ordered = undefined;
  }

  get flat(): boolean {
    return this.trees === 0 && this.sharing === 0;
  }

  /** The copy's trees as they are now. */
  viewTrees(): ViewTrees {
    this.treeIndex ??= new TreeIndex(this.byId.values());
    return this.treeIndex.trees((id) => this.byId.get(id));
  }

  /** Makes the trees ahead of viewTrees, awaiting `between` after every `perTurn` trees (for a copy nothing reads yet). */
  async prepareTrees(between: () => Promise<void>, perTurn: number): Promise<void> {
    this.treeIndex ??= new TreeIndex(this.byId.values());
    await this.treeIndex.prepare((id) => this.byId.get(id), between, perTurn);
  }

  get size(): number {
    return this.byId.size;
  }

  providers(): readonly ViewProvider[] {
    if (!this.ordered) {
      const list = [...this.byId.values()].sort((a, b) => a.id - b.id);
      this.ordered = { list, at: new Map(list.map((p, i) => [p.id, i])) };
    }
    return this.ordered.list;
  }

  memo<T>(key: string, make: () => T): T {
    if (this.memos.has(key)) return this.memos.get(key) as T;
    // Queries differ by their amounts and names: a busy copy keeps the last few dozen.
    if (this.memos.size >= MAX_MEMOS) this.memos.clear();
    const made = make();
    this.memos.set(key, made);
    return made;
  }

  evolve<T>(key: string, make: () => T, update: EvolveUpdate<T>): T {
    const kept = this.evolving.get(key);
    if (kept?.version === this.version) return kept.value as T;
    let value: T | undefined;
    const oldest = this.changes.length > 0 ? this.changes[0].version : this.version + 1;
    // The changes since the kept result are all still known when the oldest known one is no later than the first of them.
    if (kept && oldest <= kept.version + 1) {
      const changed = new Set<number>();
      for (let i = this.changes.length - 1; i >= 0 && this.changes[i].version > kept.version; i--) changed.add(this.changes[i].id);
      value = update(kept.value as T, changed, (id) => this.byId.get(id));
    }
    value ??= make();
    if (!kept && this.evolving.size >= MAX_MEMOS) this.evolving.clear();
    this.evolving.set(key, { version: this.version, value });
    return value;
  }

  private changed(id: number): void {
    if (this.memos.size > 0) this.memos.clear();
    this.version++;
    this.changes.push({ version: this.version, id });
    if (this.changes.length > 2 * CHANGES_KEPT) this.changes.splice(0, this.changes.length - CHANGES_KEPT);
  }

  private forget(p: ViewProvider): void {
    if (this.byUuid.get(p.uuid) === p) this.byUuid.delete(p.uuid);
    if (p.parentId !== null) this.trees--;
    if (p.shares) this.sharing--;
    this.treeIndex?.removed(p);
  }
}

/** What a delta read gives each request that shared it: the copy it read for, and its rows unless a full read is needed. */
type Delta = { base: Copy; rows: Rows } | { base: Copy | undefined; rows?: undefined };

/** Results a copy keeps at most, of each of Copy.memo and Copy.evolve. */
const MAX_MEMOS = 64;

/**
 * Changes a copy remembers for ViewRead.evolve: a result older than that
 * many changes is made again, as it would cost about as much to update.
 */
const CHANGES_KEPT = 1024;

/** A delta read in flight for some names, and the next one, which requests arriving meanwhile wait for. */
interface DeltaSlot {
  running: Promise<Delta>;
  next?: Promise<Delta>;
}

/** One per candidates service (so per app and database). */
export class CloudView {
  private copy: Copy | undefined;
  /** The delta reads in flight, and the one waiting to start after each, by names (see sharedDelta). */
  private readonly deltas = new Map<string, DeltaSlot>();
  /** When a full read last found more providers than the bound (undefined: not since the last copy). */
  private tooLargeAt: number | undefined;
  /** The full read in flight (see the header); it resolves, never rejects, when that read ends. */
  private fullRead: Promise<void> | undefined;
  private readonly fullReadEveryMs: number;
  private readonly maxProviders: number;
  private readonly maxTreeProviders: number;
  private readonly between: () => Promise<void>;

  constructor(
    private readonly db: Db,
    options: CloudViewOptions = {},
  ) {
    this.fullReadEveryMs = options.fullReadEveryMs ?? FULL_READ_EVERY_MS;
    this.maxProviders = options.maxProviders ?? MAX_PROVIDERS;
    this.maxTreeProviders = options.maxTreeProviders ?? MAX_TREE_PROVIDERS;
    this.between = options.between ?? (() => turn());
  }

  /**
   * Brings the copy to a snapshot taken now and gives `use` the request's
   * names and the cloud (ViewRead). `use` runs
   * before anything else can change the copy; what it returns is returned.
   * Undefined, without `use`, when the cloud is too large to copy.
   */
  async read<T>(wanted: ViewNames, use: (read: ViewRead) => T, readsAgain = 2): Promise<T | undefined> {
    if (this.tooLargeAt !== undefined && Date.now() - this.tooLargeAt < this.fullReadEveryMs) return undefined;
    const traits = [...wanted.traits, SHARING_TRAIT];
    let base = this.copy;
    if (base && this.current(base)) {
      const delta = await this.sharedDelta(traits, wanted.aggregates);
      base = delta.base;
      if (delta.rows) {
        const { base: read, rows } = delta;
        if (read.size > this.bound(read.flat)) return this.tooLarge(read);
        // Another request may have replaced the copy meanwhile: it will do when it is at least as fresh.
        const copy = this.copy;
        if (copy && copy.started === rows.started && copy.seq >= rows.seq) return use(this.seen(rows, copy));
      }
    }
    // One full read at a time (see the header): wait for the one in flight, or read from a copy made meanwhile.
    const replaced = this.copy !== undefined && this.copy !== base && this.current(this.copy);
    if (readsAgain > 0 && (this.fullRead !== undefined || replaced)) {
      await this.fullRead;
      return this.read(wanted, use, readsAgain - 1);
    }
    let ended = () => {};
    const reading = new Promise<void>((resolve) => void (ended = resolve));
    this.fullRead = reading;
    try {
      const rows = await this.run(FULL, [traits, wanted.aggregates, this.maxProviders, this.maxTreeProviders]);
      if (rows.providerCount > this.bound(isFlat(rows.names))) return this.tooLarge(base);
      this.tooLargeAt = undefined;
      const copy = await this.build(rows, base);
      // A concurrent full read may have made a fresher copy meanwhile: keep that one. (One this request
      // set out to replace goes, even if it is as fresh: it is due for a full read.)
      const other = this.copy;
      const kept = other && other !== base && other.started === copy.started && other.seq >= copy.seq ? other : copy;
      this.copy = kept;
      return use(this.seen(rows, kept));
    } finally {
      if (this.fullRead === reading) this.fullRead = undefined;
      ended();
    }
  }

  /**
   * Whether `copy` may be brought up to date from the feed: not yet due for
   * a full read, or the copy a full read in flight is replacing (see the header).
   */
  private current(copy: Copy): boolean {
    return Date.now() - copy.readAt < this.fullReadEveryMs || (this.fullRead !== undefined && copy === this.copy);
  }

  /**
   * The next delta read for these names that starts after this call: the
   * one in flight's successor when one is in flight (shared with every
   * request that asks meanwhile), else one started now (see the header).
   */
  private sharedDelta(traits: string[], aggregates: string[]): Promise<Delta> {
    const key = JSON.stringify([traits, aggregates]);
    const slot = this.deltas.get(key);
    if (!slot) return this.startDelta(key, traits, aggregates);
    const start = () => this.startDelta(key, traits, aggregates);
    slot.next ??= slot.running.then(start, start);
    return slot.next;
  }

  /** Starts a delta read as the one in flight for `key`; forgets the key when it ends with none waiting. */
  private startDelta(key: string, traits: string[], aggregates: string[]): Promise<Delta> {
    const running = this.readDelta(traits, aggregates);
    const slot: DeltaSlot = { running };
    this.deltas.set(key, slot);
    // Runs before the waiters' start (registered after it), which then puts a slot of its own.
    const end = () => {
      if (this.deltas.get(key) === slot && slot.next === undefined) this.deltas.delete(key);
    };
    void running.then(end, end);
    return running;
  }

  /**
   * One delta read: the feed's changes after the copy's seq, applied to the
   * copy (when it is still the copy and they are newer). No rows when the
   * copy is gone or due for a full read by the time the read starts, or the
   * feed cannot say what changed (the copy is then dropped).
   */
  private async readDelta(traits: string[], aggregates: string[]): Promise<Delta> {
    const base = this.copy;
    if (!base || !this.current(base)) return { base };
    const sent = base.seq;
    const rows = await this.run(DELTA, [traits, aggregates, sent]);
    // The feed cannot say what changed after `sent` (see the header): read everything again.
    if (rows.started !== base.started || rows.seq < sent || rows.prunedThrough > sent) {
      if (this.copy === base) this.copy = undefined;
      return { base };
    }
    if (this.copy === base && rows.seq > base.seq) {
      const sharingId = rows.names.traits.get(SHARING_TRAIT);
      for (const id of rows.deleted) base.remove(id);
      for (const row of rows.providers) base.put(providerOf(row, sharingId, base.get(row.id), base.sets));
      base.seq = rows.seq;
    }
    return { base, rows };
  }

  /**
   * A new copy from a full read's rows (reusing `base`'s unchanged details),
   * with its trees when it has any, built a slice at a time (see
   * PROVIDERS_PER_TURN). Nothing sees it before it is whole; meanwhile other
   * requests answer from the copy before it, or read on their own.
   */
  private async build(rows: Rows, base: Copy | undefined): Promise<Copy> {
    const sharingId = rows.names.traits.get(SHARING_TRAIT);
    const copy = new Copy(rows.seq, rows.started);
    const all = rows.providers;
    for (let from = 0; from < all.length; from += PROVIDERS_PER_TURN) {
      if (from > 0) await this.between();
      for (const row of all.slice(from, from + PROVIDERS_PER_TURN)) copy.put(providerOf(row, sharingId, base?.get(row.id), copy.sets));
    }
    if (!copy.flat) {
      await this.between();
      await copy.prepareTrees(this.between, PROVIDERS_PER_TURN / 5);
    }
    return copy;
  }

  /** How many providers a copy of a cloud of this shape may hold. */
  private bound(flat: boolean): number {
    return flat ? this.maxProviders : this.maxTreeProviders;
  }

  private tooLarge(base: Copy | undefined): undefined {
    if (this.copy === base) this.copy = undefined;
    this.tooLargeAt = Date.now();
    return undefined;
  }

  /**
   * Runs the statement on a client checked out for it, not through
   * pool.query: pg-pool keeps the result of the query that made it open a
   * connection for as long as that connection lives (its callback stays
   * reachable from the new client's connect handlers), and the first full
   * read's result is every row of the cloud (some 20 MB of strings over
   * 50,000 providers, in a heap snapshot). The pool names the statement
   * where its connections keep named ones (db/prepared.ts), as every other.
   */
  private async run(text: string, values: unknown[]): Promise<Rows> {
    const client = await poolOf(this.db).connect();
    let failure: Error | undefined;
    try {
      const result = await client.query<unknown[]>({ text, values, rowMode: "array" });
      return readRows(result.rows);
    } catch (error) {
      failure = error as Error;
      throw error;
    } finally {
      // A client whose statement failed is dropped, not reused: its connection may be the cause.
      client.release(failure);
    }
  }

  /** The copy as a read: its shape is the copy's (the statement's shape rows are those of the names only). */
  private seen(rows: Rows, copy: Copy): ViewRead {
    const names = { ...rows.names, hasTrees: copy.trees > 0, hasSharing: copy.sharing > 0 };
    const flat = copy.flat;
    return {
      names,
      classNames: rows.classNames,
      flat,
      providers: flat ? copy.providers() : [],
      trees: () => copy.viewTrees(),
      byUuid: copy.byUuid,
      memo: (key, make) => copy.memo(key, make),
      evolve: (key, make, update) => copy.evolve(key, make, update),
    };
  }
}

/** New details, the only place a KeptDetails is made (not exported: see KeptDetails). */
const keepDetails = (details: ProviderDetails): KeptDetails => details as KeptDetails;

/** A provider row as a ViewProvider, reusing `previous`'s details when they did not change and the copy's `sets`. */
function providerOf(row: ProviderRow, sharingId: number | undefined, previous: ViewProvider | undefined, sets: Map<string, ReadonlySet<number>>): ViewProvider {
  const [uuid, parent, root] = row.text.split(" ");
  const inventories: TreeInventory[] = [];
  const capacities: number[] = [];
  let used: number[] | undefined;
  for (const w = new Words(row.inventories); w.more(); ) {
    const inv = readInventory(w, row.id);
    inventories.push(inv);
    capacities.push(inv.resourceClassId, inv.capacity);
    if (inv.used !== 0) (used ??= []).push(inv.resourceClassId, inv.used);
  }
  const traits = row.traitNames ?? "";
  const kept = previous?.details;
  const same = kept !== undefined && kept.uuid === uuid && kept.traits === traits && sameCapacities(kept.inventories, capacities);
  const parentId = Number(parent);
  // A uuid split from the row's text is a slice that keeps the whole text alive: the copy keeps a string of its own.
  const ownUuid = same ? kept.uuid : (JSON.parse(JSON.stringify(uuid)) as string);
  return {
    id: row.id,
    uuid: ownUuid,
    parentId: parentId === 0 ? null : parentId,
    rootId: Number(root),
    details: same ? kept : keepDetails({ uuid: ownUuid, inventories: capacities.slice(), traits }),
    inventories: inventories.slice(),
    used: used?.slice(),
    traits: internedSet(row.traitIds, sets),
    aggregates: internedSet(row.aggregateIds, sets),
    shares: sharingId !== undefined && row.traitIds.includes(sharingId),
  };
}

/**
 * The copy keeps every provider for as long as the server runs, so it is kept
 * small: arrays are copied to their exact length once built (an array grown
 * by push keeps room for 16 elements), and providers with the same traits (or
 * aggregates) share one set: a cloud's providers have a handful of distinct
 * sets (every NUMA node the same traits, every compute node of an aggregate
 * the same aggregates), where a set of its own per provider was some 150
 * bytes each. A copy's sets are dropped with it, at the next full read.
 */
const NONE: ReadonlySet<number> = new Set();

function internedSet(ids: number[], sets: Map<string, ReadonlySet<number>>): ReadonlySet<number> {
  if (ids.length === 0) return NONE;
  // Sets of traits and of aggregates share the map: their ids are alike, and a set is only read.
  const key = ids.length === 1 ? String(ids[0]) : [...ids].sort((a, b) => a - b).join(" ");
  let set = sets.get(key);
  if (set === undefined) sets.set(key, (set = new Set(ids)));
  return set;
}

function sameCapacities(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((n, i) => b[i] === n);
}
