/**
 * The inventory record as clients send it, shared by the inventory routes and
 * POST /reshaper (which takes the same records per provider).
 */
import { z } from "zod";
import { zInteger } from "../http/json-types.js";
import { INVENTORY_DEFAULTS, MAX_INT, type InventoryData } from "../services/inventories.js";

/** Largest allocation_ratio: a single-precision float column's maximum, as in Placement. */
const SQL_SP_FLOAT_MAX = 3.40282e38;
export const RC_PATTERN = /^[A-Z0-9_]+$/;

const amount = (min: number) => zInteger({ min, max: MAX_INT });

/** One inventory record; resource_provider_generation may be sent but only the single-record PUT requires it. */
export const INVENTORY_RECORD = z.strictObject({
  resource_provider_generation: zInteger().optional(),
  total: amount(1),
  reserved: amount(0).optional(),
  min_unit: amount(1).optional(),
  max_unit: amount(1).optional(),
  step_size: amount(1).optional(),
  // No lower bound, as in Placement: a ratio of 0 is how an operator stops new
  // allocations on a class without removing its inventory.
  allocation_ratio: z.number().max(SQL_SP_FLOAT_MAX).optional(),
});

export type InventoryRecord = z.output<typeof INVENTORY_RECORD>;

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
