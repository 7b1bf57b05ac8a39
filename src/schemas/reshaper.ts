/** POST /reshaper (1.30), as Placement's schemas/reshaper.py: several providers' inventories and consumers' allocations. */
import { z } from "zod";
import { byConsumer, PUT_ALLOCATIONS_V1_28, PUT_ALLOCATIONS_V1_34, PUT_ALLOCATIONS_V1_38, type ParsedConsumerBody } from "./allocations.js";
import { GENERATION, minProperties, RESOURCE_CLASS_NAME, UUID_KEY } from "./common.js";
import { INVENTORY_RECORD, type InventoryRecord } from "./inventories.js";
import { versioned } from "./versioned.js";

const PROVIDER_INVENTORIES = z.strictObject({
  resource_provider_generation: GENERATION,
  inventories: z.record(RESOURCE_CLASS_NAME, INVENTORY_RECORD),
});

/** 1.30: at least one provider's inventories, and the allocations (possibly none: the POST forms with no minimum). */
const POST_RESHAPER_V1_30 = z.strictObject({
  inventories: minProperties(z.record(UUID_KEY, PROVIDER_INVENTORIES), 1),
  allocations: byConsumer(PUT_ALLOCATIONS_V1_28, 0),
});
/** 1.34: allocations may carry mappings. */
const POST_RESHAPER_V1_34 = POST_RESHAPER_V1_30.extend({ allocations: byConsumer(PUT_ALLOCATIONS_V1_34, 0) });
/** 1.38: allocations need a consumer_type. */
const POST_RESHAPER_V1_38 = POST_RESHAPER_V1_30.extend({ allocations: byConsumer(PUT_ALLOCATIONS_V1_38, 0) });

export const POST_RESHAPER = versioned([
  { from: "1.30", schema: POST_RESHAPER_V1_30 },
  { from: "1.34", schema: POST_RESHAPER_V1_34 },
  { from: "1.38", schema: POST_RESHAPER_V1_38 },
]);

/** What every version's body has in common after parsing. */
export interface ParsedReshape {
  inventories: Record<string, { resource_provider_generation: number; inventories: Record<string, InventoryRecord> }>;
  allocations: Record<string, ParsedConsumerBody>;
}
