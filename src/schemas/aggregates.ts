/** PUT /resource_providers/{uuid}/aggregates (from 1.1), as Placement's schemas/aggregate.py. */
import { z } from "zod";
import { GENERATION, uniqueItems, zUuid } from "./common.js";
import { versioned } from "./versioned.js";

const AGGREGATE_LIST = uniqueItems(z.array(zUuid()));

/** 1.1: the bare list of aggregate uuids. */
export const PUT_AGGREGATES_V1_1 = AGGREGATE_LIST;
/** 1.19: an object that also carries the generation the client saw. */
export const PUT_AGGREGATES_V1_19 = z.strictObject({ aggregates: AGGREGATE_LIST, resource_provider_generation: GENERATION });

export const PUT_AGGREGATES = versioned([
  { from: "1.1", schema: PUT_AGGREGATES_V1_1 },
  { from: "1.19", schema: PUT_AGGREGATES_V1_19 },
]);
