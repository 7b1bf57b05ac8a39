/**
 * Inventory bodies, as Placement's schemas/inventory.py: the record clients
 * send (shared with POST /reshaper, which takes the same records per
 * provider) and the three writes built from it. The same at every
 * microversion; 1.26 changes a rule the service checks (reserved may equal
 * total), not the schema.
 */
import { z } from "zod";
import { INVENTORY_DEFAULTS, MAX_INT, type InventoryData } from "../services/inventories.js";
import { pyRepr } from "../http/validation.js";
import { GENERATION, RESOURCE_CLASS_NAME, zInteger } from "./common.js";
import { versioned } from "./versioned.js";

/** Largest allocation_ratio: a single-precision float column's maximum, as in Placement. */
const SQL_SP_FLOAT_MAX = 3.40282e38;

const amount = (min: number) => zInteger({ min, max: MAX_INT });

/**
 * No lower bound, as in Placement: a ratio of 0 is how an operator stops new
 * allocations on a class without removing its inventory. Python's json reads
 * Infinity (and 1e400 as infinity), which is over the maximum there too; NaN
 * and -Infinity pass Placement's schema and end in a 500 when it computes the
 * capacity, so they are refused here as numbers that are not finite.
 */
const ALLOCATION_RATIO = z
  .unknown()
  .superRefine((value, ctx) => {
    if (value === Infinity) ctx.addIssue({ code: "too_big", origin: "number", maximum: SQL_SP_FLOAT_MAX, inclusive: true, input: value, message: "too big" });
    else if (Number.isNaN(value) || value === -Infinity) {
      ctx.addIssue({ code: "custom", input: value, message: `${pyRepr(value)} is not a finite number`, params: { validator: "type" } });
    }
  })
  .pipe(z.number().max(SQL_SP_FLOAT_MAX));

/** One inventory record; resource_provider_generation may be sent but only the single-record PUT requires it. */
export const INVENTORY_RECORD = z.strictObject({
  resource_provider_generation: GENERATION.optional(),
  total: amount(1),
  reserved: amount(0).optional(),
  min_unit: amount(1).optional(),
  max_unit: amount(1).optional(),
  step_size: amount(1).optional(),
  allocation_ratio: ALLOCATION_RATIO.optional(),
});

export type InventoryRecord = z.output<typeof INVENTORY_RECORD>;

/** PUT .../inventories/{rc}: the record plus the generation the client saw. */
export const PUT_INVENTORY = versioned([{ from: "1.0", schema: INVENTORY_RECORD.extend({ resource_provider_generation: GENERATION }) }]);

/** POST .../inventories: the record plus its class. */
export const POST_INVENTORY = versioned([{ from: "1.0", schema: INVENTORY_RECORD.extend({ resource_class: RESOURCE_CLASS_NAME }) }]);

/** PUT .../inventories: every record by class, with the generation. */
export const PUT_INVENTORIES = versioned([
  {
    from: "1.0",
    schema: z.strictObject({
      resource_provider_generation: GENERATION,
      // patternProperties without additionalProperties: false, as in Placement, so
      // a malformed class name is not a schema error but an unknown class (400).
      inventories: z.record(z.string(), INVENTORY_RECORD),
    }),
  },
]);

/** Fills in Placement's defaults for the fields a client left out. */
export function inventoryWithDefaults(r: InventoryRecord): InventoryData {
  return {
    total: r.total,
    reserved: r.reserved ?? INVENTORY_DEFAULTS.reserved,
    minUnit: r.min_unit ?? INVENTORY_DEFAULTS.minUnit,
    maxUnit: r.max_unit ?? INVENTORY_DEFAULTS.maxUnit,
    stepSize: r.step_size ?? INVENTORY_DEFAULTS.stepSize,
    allocationRatio: r.allocation_ratio ?? INVENTORY_DEFAULTS.allocationRatio,
  };
}
