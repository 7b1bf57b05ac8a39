/**
 * The trees of the cloud view's copy (cloud-view.ts), as the general plan
 * reads them (view-tree-reads.ts): each tree's providers, inventories and
 * trait names in the form of a tree load from the database (sql/tree-loads.ts
 * TreeData), made once and kept until one of its providers changes.
 *
 * A request reads its trees over several turns of the event loop (batch
 * after batch, the body leaving in between), while other requests bring the
 * copy forward. So what it reads never changes: a ViewTrees and every tree in
 * it are made whole and then only replaced, never edited; a request keeps
 * the ViewTrees of its own read to the end.
 *
 * Which trees there are is what the engine's reads see in the tables: a root
 * is a provider without a parent, and its tree is every provider whose root
 * is that root (a provider without a root is in no tree).
 */
import { IdMap } from "./id-map.js";
import type { TreeData, TreeInventory } from "./sql/tree-loads.js";

const NO_TRAITS = new Map<number, string[]>();
const NO_NAMES = new Map<number, string>();

/** What a tree needs of a provider of the copy (cloud-view.ts ViewProvider). */
export interface TreeMember {
  id: number;
  uuid: string;
  parentId: number | null;
  /** 0: the provider has no root. */
  rootId: number;
  inventories: readonly TreeInventory[];
  /** Trait ids and aggregate ids. */
  traits: ReadonlySet<number>;
  aggregates: ReadonlySet<number>;
  /** Shares its inventory through aggregates (it has MISC_SHARES_VIA_AGGREGATE). */
  shares: boolean;
  /** Trait names in id order, space-separated. */
  details: { readonly traits: string };
}

export interface ViewTree {
  rootId: number;
  /** As a tree load gives it, but for class names (the request's read gives those). */
  data: TreeData;
  /** The tree's providers in id order (the same objects as data.providers). */
  members: readonly TreeMember[];
}

/** The copy's trees at one state, in root id order; never changed once made. */
export class ViewTrees {
  private byProvider?: IdMap<TreeMember>;
  private rootsByAggregate?: Map<number, number[]>;
  private sharedByRoot?: IdMap<TreeMember[]>;

  constructor(readonly list: readonly ViewTree[]) {}

  /** The tree of the root `rootId`, if it is one. */
  tree(rootId: number): ViewTree | undefined {
    const at = this.indexAfter(rootId - 1);
    return at < this.list.length && this.list[at].rootId === rootId ? this.list[at] : undefined;
  }

  /** The place in `list` of the first tree whose root id is above `afterId`. */
  indexAfter(afterId: number): number {
    let lo = 0;
    let hi = this.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.list[mid].rootId <= afterId) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** A provider of one of the trees. */
  provider(id: number): TreeMember | undefined {
    if (!this.byProvider) {
      this.byProvider = new IdMap();
      for (const t of this.list) for (const p of t.members) this.byProvider.set(p.id, p);
    }
    return this.byProvider.get(id);
  }

  /** Every provider of the trees, tree by tree. */
  *providers(): Generator<TreeMember> {
    for (const t of this.list) yield* t.members;
  }

  /** The roots of the trees holding a member of aggregate `id`, ascending, without repeats. */
  rootsIn(aggregateId: number): readonly number[] {
    if (!this.rootsByAggregate) {
      const sets = new Map<number, Set<number>>();
      for (const t of this.list) {
        for (const p of t.members) {
          for (const a of p.aggregates) {
            let roots = sets.get(a);
            if (!roots) sets.set(a, (roots = new Set()));
            roots.add(t.rootId);
          }
        }
      }
      // Trees come in root order, so each set is already ascending.
      this.rootsByAggregate = new Map([...sets].map(([a, roots]) => [a, [...roots]]));
    }
    return this.rootsByAggregate.get(aggregateId) ?? [];
  }

  /**
   * The providers that share (TreeMember.shares) and are in one of the
   * aggregates of a member of the tree of `rootId`, other than their own
   * tree: those whose inventory the tree's candidates may take, in tree order.
   */
  sharingInto(rootId: number): readonly TreeMember[] {
    if (!this.sharedByRoot) {
      this.sharedByRoot = new IdMap();
      for (const t of this.list) {
        for (const p of t.members) {
          if (!p.shares) continue;
          const anchors = new Set<number>();
          for (const a of p.aggregates) for (const root of this.rootsIn(a)) if (root !== t.rootId) anchors.add(root);
          for (const root of anchors) {
            const list = this.sharedByRoot.get(root);
            if (list) list.push(p);
            else this.sharedByRoot.set(root, [p]);
          }
        }
      }
    }
    return this.sharedByRoot.get(rootId) ?? NO_MEMBERS;
  }
}

const NO_MEMBERS: readonly TreeMember[] = [];

/**
 * Which providers each root holds, kept beside the copy from its first
 * request for trees on, and the ViewTrees last made: the trees of providers
 * that changed since are made again at the next request, the others kept.
 */
export class TreeIndex {
  private readonly membersOf = new Map<number, Set<number>>();
  /** Roots whose tree may have changed, and providers that may have become or stopped being roots. */
  private readonly dirty = new Set<number>();
  private made: ViewTrees | undefined;
  /**
   * Each distinct text of trait names as the list a tree load gives, shared by
   * the trees' providers (every NUMA node of a cloud has the same list); only
   * ever read. Dropped with the copy (cloud-view.ts), at its next full read.
   */
  private readonly traitLists = new Map<string, string[]>();

  constructor(providers: Iterable<TreeMember>) {
    for (const p of providers) this.added(p);
  }

  /** `p` joined the copy (or replaced an earlier row of itself, removed first). */
  added(p: TreeMember): void {
    if (p.rootId !== 0) {
      let members = this.membersOf.get(p.rootId);
      if (!members) this.membersOf.set(p.rootId, (members = new Set()));
      members.add(p.id);
    }
    this.touch(p);
  }

  removed(p: TreeMember): void {
    const members = this.membersOf.get(p.rootId);
    if (members) {
      members.delete(p.id);
      if (members.size === 0) this.membersOf.delete(p.rootId);
    }
    this.touch(p);
  }

  /** The trees as the copy holds them now; `get` reads the copy's providers. */
  trees(get: (id: number) => TreeMember | undefined): ViewTrees {
    if (this.made && this.dirty.size === 0) return this.made;
    const changed = new Map<number, ViewTree | undefined>();
    for (const id of this.dirty) changed.set(id, this.changedTree(id, get));
    return this.merge(changed);
  }

  /**
   * What trees() does, with the changed trees built `perTurn` at a time and
   * `between` awaited after each slice: for a copy being built from a full
   * read, which nothing reads until it is whole (10,000 nested trees built in
   * one piece held the event loop, and every other request, that long).
   */
  async prepare(get: (id: number) => TreeMember | undefined, between: () => Promise<void>, perTurn: number): Promise<void> {
    const ids = [...this.dirty];
    const changed = new Map<number, ViewTree | undefined>();
    for (let from = 0; from < ids.length; from += perTurn) {
      if (from > 0) await between();
      for (const id of ids.slice(from, from + perTurn)) changed.set(id, this.changedTree(id, get));
    }
    this.merge(changed);
  }

  /** The tree of root `id` now (undefined when `id` is no longer a root). */
  private changedTree(id: number, get: (id: number) => TreeMember | undefined): ViewTree | undefined {
    const root = get(id);
    return root && root.parentId === null ? this.build(id, get) : undefined;
  }

  /** The trees made last with `changed` in place of (or beside) theirs, as the trees now made. */
  private merge(changed: Map<number, ViewTree | undefined>): ViewTrees {
    for (const id of changed.keys()) this.dirty.delete(id);
    const old = this.made?.list ?? [];
    const list: ViewTree[] = [];
    // Merge the kept trees (in root order) with the changed ones (sorted), dropping those that are gone.
    const fresh = [...changed.keys()].sort((a, b) => a - b);
    let i = 0;
    for (const id of fresh) {
      while (i < old.length && old[i].rootId < id) list.push(old[i++]);
      if (i < old.length && old[i].rootId === id) i++;
      const tree = changed.get(id);
      if (tree) list.push(tree);
    }
    while (i < old.length) list.push(old[i++]);
    this.made = new ViewTrees(list);
    return this.made;
  }

  private traitList(text: string): string[] {
    let list = this.traitLists.get(text);
    if (list === undefined) this.traitLists.set(text, (list = text.split(" ")));
    return list;
  }

  private touch(p: TreeMember): void {
    this.dirty.add(p.id);
    if (p.rootId !== 0) this.dirty.add(p.rootId);
  }

  private build(rootId: number, get: (id: number) => TreeMember | undefined): ViewTree {
    const members = [...(this.membersOf.get(rootId) ?? [])].sort((a, b) => a - b).map((id) => get(id)!);
    // Kept until the tree changes: arrays of their exact length (see cloud-view.ts internedSet), one shared empty map and shared trait lists.
    const inventories = members.length === 1 ? members[0].inventories.slice() : members.flatMap((p) => p.inventories);
    const named = members.filter((p) => p.details.traits !== "");
    const traits = named.length === 0 ? NO_TRAITS : new Map(named.map((p) => [p.id, this.traitList(p.details.traits)]));
    return { rootId, data: { providers: members, inventories, traits, classNames: NO_NAMES }, members };
  }
}
