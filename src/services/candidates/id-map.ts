/**
 * A map keyed by provider id, for the engine's per-request lookups (each
 * provider's row, inventories, root, quoted uuid; the providers a candidate
 * used). Provider ids are a sequence's small integers and a request's are
 * clustered, so the values live in pages of consecutive ids and a lookup is
 * two array reads, where a Map hashes every key and, once it holds tens of
 * thousands of entries (a large nested answer), misses the processor's
 * caches on most lookups. Values are never undefined (undefined marks an
 * empty slot).
 */
const PAGE_BITS = 10;
const PAGE_SIZE = 1 << PAGE_BITS;
const SLOT = PAGE_SIZE - 1;

export class IdMap<T> {
  private pages: Array<Array<T | undefined> | undefined> = [];
  /** The numbers of the pages made, so iterating never walks the holes of a sparse `pages`. */
  private made: number[] = [];
  private madeInOrder = true;

  get(id: number): T | undefined {
    const page = this.pages[id >>> PAGE_BITS];
    return page === undefined ? undefined : page[id & SLOT];
  }

  set(id: number, value: T): this {
    const p = id >>> PAGE_BITS;
    let page = this.pages[p];
    if (page === undefined) {
      page = this.pages[p] = new Array<T | undefined>(PAGE_SIZE).fill(undefined);
      if (this.made.length > 0 && p < this.made[this.made.length - 1]) this.madeInOrder = false;
      this.made.push(p);
    }
    page[id & SLOT] = value;
    return this;
  }

  clear(): void {
    this.pages = [];
    this.made = [];
    this.madeInOrder = true;
  }

  /**
   * Calls `fn` with each value and its id, in increasing order of ids: a
   * loop, where spreading values() or keys() makes an iterator result per
   * entry (over the 50,000 providers of a large nested answer, a tenth of its garbage).
   */
  forEach(fn: (value: T, id: number) => void): void {
    for (const p of this.pagesInOrder()) {
      const page = this.pages[p]!;
      const base = p << PAGE_BITS;
      for (let i = 0; i < PAGE_SIZE; i++) {
        const v = page[i];
        if (v !== undefined) fn(v, base | i);
      }
    }
  }

  /** The ids held, in increasing order. */
  *keys(): Generator<number> {
    for (const p of this.pagesInOrder()) {
      const page = this.pages[p]!;
      for (let i = 0; i < PAGE_SIZE; i++) if (page[i] !== undefined) yield (p << PAGE_BITS) | i;
    }
  }

  /** The values, in increasing order of their ids. */
  *values(): Generator<T> {
    for (const p of this.pagesInOrder()) for (const v of this.pages[p]!) if (v !== undefined) yield v;
  }

  private pagesInOrder(): number[] {
    if (!this.madeInOrder) {
      this.made.sort((a, b) => a - b);
      this.madeInOrder = true;
    }
    return this.made;
  }
}

/** A set of provider ids, on IdMap. */
export class IdSet {
  private readonly map = new IdMap<true>();

  add(id: number): this {
    this.map.set(id, true);
    return this;
  }

  has(id: number): boolean {
    return this.map.get(id) !== undefined;
  }

  /** Calls `fn` with each id, in increasing order (IdMap.forEach). */
  forEach(fn: (id: number) => void): void {
    this.map.forEach((_, id) => {
      fn(id);
    });
  }

  /** The ids, in increasing order. */
  [Symbol.iterator](): Generator<number> {
    return this.map.keys();
  }
}
