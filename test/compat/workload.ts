/**
 * The seeded workload: which step comes next, weighted so that trees, sharing
 * providers, inventories and consumers exist before the steps that need them.
 */
import { Model, type Step } from "./model.js";
import { Random } from "./random.js";
import type { Response } from "./request.js";
import * as alloc from "./workload-allocations.js";
import * as prov from "./workload-providers.js";

type Maker = (c: prov.Context) => Step | Step[] | null;

export class Workload {
  readonly model = new Model();
  private readonly context: prov.Context;
  private readonly r: Random;

  constructor(seed: number, generatedUuid: (sym: string, reference: Response, ours: Response) => void) {
    this.r = new Random(seed);
    this.context = { r: this.r, model: this.model, generatedUuid };
  }

  next(): Step[] {
    const providers = this.model.providers.size;
    const withInventory = [...this.model.providers.values()].filter((p) => p.inventories.size > 0).length;
    const makers: Array<[number, Maker]> = [
      [providers < 8 ? 30 : 6, prov.createProvider],
      [3, prov.getProvider],
      [3, prov.listProviders],
      [3, prov.updateProvider],
      [providers > 12 ? 3 : 1, prov.deleteProvider],
      [withInventory < 5 ? 20 : 7, prov.putInventories],
      [3, prov.putInventory],
      [2, prov.postInventory],
      [2, prov.deleteInventory],
      [2, prov.getInventories],
      [4, prov.putAggregates],
      [1, prov.getAggregates],
      [6, prov.putProviderTraits],
      [1, prov.deleteProviderTraits],
      [1, prov.getProviderTraits],
      [4, prov.traitRoutes],
      [4, prov.resourceClassRoutes],
      [withInventory > 0 ? 12 : 0, alloc.putAllocations],
      [withInventory > 0 ? 5 : 0, alloc.postAllocations],
      [3, alloc.allocationReads],
      [2, alloc.deleteAllocations],
      [withInventory > 0 ? 0.5 : 0, alloc.retryAfterUnknownProvider],
      [3, alloc.usages],
      [2, alloc.reshape],
      [7, alloc.candidates],
      [2, alloc.miscellany],
    ];
    for (;;) {
      const made = this.r.weighted(makers)(this.context);
      if (made === null) continue;
      const steps = Array.isArray(made) ? made : [made];
      if (steps.length) return steps;
    }
  }
}
