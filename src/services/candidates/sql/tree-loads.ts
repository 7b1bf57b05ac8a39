/**
 * The engine's tree loads. Each of the engine's reads is one query over
 * whole sets of providers (never one query per provider), so a request
 * costs a handful of round trips whatever the number of providers:
 * lookupNames (names.ts), memberships (and rootsOf when needed;
 * memberships.ts), where sharing providers anchor (sharingAnchors once, or
 * under a limit sharingAnchorsAmong per batch), then per batch of trees one loadTreesAfter (its
 * roots and their trees), whose inventories the engine checks for capacity
 * itself (the batch needs them all for summaries and combining anyway);
 * without a limit, every root at once (rootIdsAfter) and, per batch, its
 * run of roots' trees (loadTreeRangeTexts), asked for ahead and sent one
 * after another (tree-reads.ts). On a flat cloud flat-source.ts replaces the
 * batches with a single filter (conditions.ts).
 *
 * Plans on PostgreSQL 15 with the migration's indexes:
 * - loadTreesAfter: the batch's roots by resource_providers_pkey in order,
 *   filtered on no parent, LIMIT; then its trees as in loadTrees, the range
 *   taken from the roots' smallest and largest id.
 * - loadTrees: the batch's providers by resource_providers_root_provider_id_idx
 *   (a range over the batch's root ids plus `= ANY`, which the planner
 *   underestimates on purpose; loadTreeRangeTexts: the range, underestimated
 *   too), then index joins to inventories (inventories_provider_class_unique)
 *   and resource_provider_traits (primary key) on a large cloud, hash joins
 *   on a small one; most of its time is formatting the texts.
 *   Capacity is not a query of its own joined to the batch's trees: the
 *   planner estimates the join of a few request rows with inventories at one
 *   row and runs it as an index probe per inventory.
 * Usage is `inventories.used`, which triggers keep equal to the sum of the
 * allocations (migration inventory_usage_triggers): neither read touches
 * `allocations`, so their cost does not grow with the number of allocations.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../../../db/database.js";
import { inventoryTextSql, readInventory, Words } from "./inventory-text.js";
import { namedRows } from "./statement.js";

export interface TreeProvider {
  id: number;
  uuid: string;
  parentId: number | null;
  rootId: number;
  /** The provider's own inventories (in class id order from the view, in any order from the database). */
  inventories: readonly TreeInventory[];
}

export interface TreeInventory {
  providerId: number;
  resourceClassId: number;
  capacity: number;
  used: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
}

export interface TreeData {
  /** In id order. */
  providers: TreeProvider[];
  inventories: TreeInventory[];
  /** Provider id to its trait names, in trait id order. */
  traits: Map<number, string[]>;
  /** Every resource class's name by id, as the read saw them (a custom class can be renamed). */
  classNames: Map<number, string>;
}

/**
 * Everything about the trees under `rootIds` that capacity, the summaries and
 * the combination need, in one round trip: providers, inventories with their
 * usage, traits, and every class's name. Each comes as one
 * space-separated text (uuids and trait and class names hold no spaces)
 * rather than as rows: the driver's parsing of thousands of rows into
 * objects cost several times more of the server's busy core than reading
 * the texts (Words). Formatting them is most of the statement's time in
 * PostgreSQL, as formatting rows was.
 */
export async function loadTrees(tx: Queryable, rootIds: number[]): Promise<TreeData> {
  return readTrees(await loadTreeTexts(tx, rootIds));
}

/** loadTrees's statement, its texts not yet read (readTrees). */
export async function loadTreeTexts(tx: Queryable, rootIds: number[]): Promise<TreeTexts | undefined> {
  if (rootIds.length === 0) return undefined;
  const lowest = rootIds.reduce((a, b) => Math.min(a, b));
  const highest = rootIds.reduce((a, b) => Math.max(a, b));
  const [found] = await namedRows<TreeTexts>(
    tx,
    "ac_load_trees",
    // The range is redundant but for the planner: it makes the estimate small, so a batch of a few
    // hundred trees among thousands is read through indexes, where `= ANY` alone gave sequential
    // scans and hash joins over every table. Materialized: the three texts read it once, not each.
    sql`WITH p AS MATERIALIZED (
          SELECT id, uuid, parent_provider_id, root_provider_id FROM resource_providers
          WHERE root_provider_id BETWEEN ${lowest} AND ${highest}
            AND root_provider_id = ANY(${sql.param(rootIds)}::int[])
        )
        SELECT ${TREE_TEXTS}`,
  );
  return found;
}

/**
 * The texts loadTrees reads, of every tree whose root's id is from `lowest`
 * to `highest` but the roots in `except`: for a run of consecutive roots
 * (a batch cut from rootIdsAfter's list), one range scan of the root index,
 * where a list costs PostgreSQL an index descent per root (about a third of
 * a batch's load in timings of the statement alone).
 */
export async function loadTreeRangeTexts(tx: Queryable, lowest: number, highest: number, except: number[]): Promise<TreeTexts | undefined> {
  const [found] = await namedRows<TreeTexts>(
    tx,
    "ac_load_tree_range",
    // `root_provider_id + 0 >= lowest` is always true, but the planner cannot know it and estimates
    // a third of the range's providers: estimated at their true number, a batch's providers were
    // joined to every inventory and trait by hashing (10,000 nested trees: the load twice as slow,
    // the answer without a limit 1.2 to 2.2 s), where the estimate of a list of roots, and this one,
    // give index lookups per provider on a large cloud and hashing only on a small one.
    sql`WITH p AS MATERIALIZED (
          SELECT id, uuid, parent_provider_id, root_provider_id FROM resource_providers
          WHERE root_provider_id BETWEEN ${lowest} AND ${highest} AND root_provider_id + 0 >= ${lowest}
            AND root_provider_id <> ALL(${sql.param(except)}::int[])
        )
        SELECT ${TREE_TEXTS}`,
  );
  return found;
}

/**
 * The next `count` root providers after `afterId` in id order (every one
 * when no count is given) and, but for the roots in `except`, their trees as
 * loadTrees reads them, in one round trip. A batch's roots and its trees as
 * two statements meant the second was sent only once the engine had read the
 * first, which it did after combining the batch before: one statement is
 * sent before that combining starts, so PostgreSQL loads the next batch on
 * the other core meanwhile. The range on the batch's smallest and largest
 * root is there for the planner, as in loadTrees.
 */
export async function loadTreesAfter(tx: Queryable, afterId: number, count: number | undefined, except: number[]): Promise<{ roots: number[]; data: TreeData }> {
  const limit = count === undefined ? sql`` : sql`LIMIT ${count}`;
  const [found] = await namedRows<TreeTexts & { r: string | null }>(
    tx,
    "ac_load_trees_after",
    sql`WITH r AS MATERIALIZED (
          SELECT id FROM resource_providers WHERE parent_provider_id IS NULL AND id > ${afterId} ORDER BY id ${limit}
        ), p AS MATERIALIZED (
          SELECT id, uuid, parent_provider_id, root_provider_id FROM resource_providers
          WHERE root_provider_id BETWEEN (SELECT min(id) FROM r) AND (SELECT max(id) FROM r)
            AND root_provider_id IN (SELECT id FROM r) AND root_provider_id <> ALL(${sql.param(except)}::int[])
        )
        SELECT (SELECT string_agg(id::text, ' ' ORDER BY id) FROM r) AS r, ${TREE_TEXTS}`,
  );
  return { roots: idsOf(found?.r), data: readTrees(found) };
}

/** Every root provider after `afterId`, in id order (one text, as loadTreesAfter gives a batch's). */
export async function rootIdsAfter(tx: Queryable, afterId: number): Promise<number[]> {
  const [found] = await namedRows<{ r: string | null }>(
    tx,
    "ac_root_ids_after",
    sql`SELECT string_agg(id::text, ' ' ORDER BY id) AS r FROM resource_providers WHERE parent_provider_id IS NULL AND id > ${afterId}`,
  );
  return idsOf(found?.r);
}

/** Space-separated ids, as string_agg gives them. */
function idsOf(text: string | null | undefined): number[] {
  const ids: number[] = [];
  for (const r = new Words(text); r.more(); ) ids.push(r.int());
  return ids;
}

/** The texts of a tree load over the providers `p` (see loadTrees). */
export interface TreeTexts {
  p: string | null;
  i: string | null;
  t: string | null;
  c: string | null;
}

const TREE_TEXTS = sql`
  (SELECT string_agg(id || ' ' || coalesce(parent_provider_id, 0) || ' ' || root_provider_id || ' ' || uuid, ' ') FROM p) AS p,
  (SELECT string_agg(inv.resource_provider_id || ' ' || ${sql.raw(inventoryTextSql("inv"))}, ' ')
   FROM p JOIN inventories inv ON inv.resource_provider_id = p.id) AS i,
  (SELECT string_agg(rpt.resource_provider_id || ' ' || t.name, ' ' ORDER BY rpt.resource_provider_id, t.id)
   FROM p JOIN resource_provider_traits rpt ON rpt.resource_provider_id = p.id JOIN traits t ON t.id = rpt.trait_id) AS t,
  (SELECT string_agg(id || ' ' || name, ' ') FROM resource_classes) AS c`;

const NO_INVENTORIES: readonly TreeInventory[] = [];

export function readTrees(found: TreeTexts | undefined): TreeData {
  const data: TreeData = { providers: [], inventories: [], traits: new Map(), classNames: new Map() };
  // Each provider with the list of its own inventories, made at its first (one empty list for those without).
  const byId = new Map<number, { inventories: readonly TreeInventory[] }>();
  const p = new Words(found?.p);
  while (p.more()) {
    const id = p.int();
    const parent = p.int();
    const provider = { id, parentId: parent === 0 ? null : parent, rootId: p.int(), uuid: p.word(), inventories: NO_INVENTORIES };
    data.providers.push(provider);
    byId.set(id, provider);
  }
  for (const c = new Words(found?.c); c.more(); ) data.classNames.set(c.int(), c.word());
  for (const i = new Words(found?.i); i.more(); ) {
    const providerId = i.int();
    const inv = readInventory(i, providerId);
    data.inventories.push(inv);
    const provider = byId.get(providerId);
    if (provider) provider.inventories = provider.inventories === NO_INVENTORIES ? [inv] : [...provider.inventories, inv];
  }
  for (const t = new Words(found?.t); t.more(); ) {
    const rp = t.int();
    const name = t.word();
    const list = data.traits.get(rp);
    if (list) list.push(name);
    else data.traits.set(rp, [name]);
  }
  data.providers.sort((a, b) => a.id - b.id);
  return data;
}
