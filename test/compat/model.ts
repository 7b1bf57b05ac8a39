/**
 * What the workload believes both servers hold. It is only ever updated from
 * reads on which both servers agreed; an entity a step answered differently
 * for is dropped (tainted) so later steps do not keep tripping over it.
 */
import type { Request, Response } from "./request.js";

export interface Inventory {
  total: number;
  reserved: number;
  min_unit: number;
  max_unit: number;
  step_size: number;
  allocation_ratio: number;
}

export interface Provider {
  sym: string;
  name: string;
  parent?: string;
  root: string;
  inventories: Map<string, Inventory>;
  traits: string[];
  aggregates: string[];
}

export interface Consumer {
  sym: string;
  project: string;
  user: string;
  /** provider sym -> class -> amount */
  allocations: Map<string, Record<string, number>>;
}

export class Model {
  readonly providers = new Map<string, Provider>();
  readonly consumers = new Map<string, Consumer>();
  readonly customClasses = new Set<string>();
  readonly customTraits = new Set<string>();
  /**
   * Custom classes renamed away or deleted on both sides: still asked for now
   * and then (a client with a stale list does), and known to the reference's
   * other worker processes (docs/placement-bugs.md).
   */
  readonly retiredClasses = new Set<string>();
  /** Once anything diverged, a list or candidates query may differ for that reason alone. */
  diverged = false;
  private counter = 0;

  nextName(prefix: string): string {
    this.counter += 1;
    return `${prefix}${this.counter}`;
  }

  children(sym: string): Provider[] {
    return [...this.providers.values()].filter((p) => p.parent === sym);
  }

  tree(root: string): Provider[] {
    return [...this.providers.values()].filter((p) => p.root === root);
  }

  /** Drops a provider's whole tree and every consumer that touches it (and so on). */
  taintProvider(sym: string): void {
    const provider = this.providers.get(sym);
    if (!provider) return;
    this.diverged = true;
    for (const p of this.tree(provider.root)) {
      this.providers.delete(p.sym);
      for (const c of [...this.consumers.values()]) if (c.allocations.has(p.sym)) this.taintConsumer(c.sym);
    }
  }

  taintConsumer(sym: string): void {
    const consumer = this.consumers.get(sym);
    if (!consumer) return;
    this.diverged = true;
    this.consumers.delete(sym);
    for (const p of consumer.allocations.keys()) this.taintProvider(p);
  }
}

/** The two answers to one request, already rendered per side. */
export interface Exchange {
  label: string;
  request: Request;
  reference: Response;
  ours: Response;
}

export interface Step {
  /** Groups differences: the route template plus the variant of input. */
  label: string;
  request: Request;
  /** What a write may have changed, by provider or consumer symbol: re-read (and compared) after it. */
  touches?: { providers?: string[]; inventories?: string[]; traits?: string[]; aggregates?: string[]; consumers?: string[] };
  /** Model updates that need the answers (e.g. server-chosen uuids, classes created). */
  after?: (reference: Response, ours: Response) => void;
  /** Sent to both after the step, not compared: brings the sides back together after a known reference bug. */
  cleanup?: Request[];
  /**
   * Sent to the reference alone before `cleanup`: makes it write what the
   * known bug kept it from writing, so both sides' generations move alike.
   */
  referenceCleanup?: Request[];
  /** Query over everything (lists, candidates, usages): may differ only because of an earlier divergence. */
  global?: boolean;
}
