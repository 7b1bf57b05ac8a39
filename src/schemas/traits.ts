/**
 * Traits (from 1.6), as Placement's schemas/trait.py: the GET /traits query
 * and the body of PUT /resource_providers/{uuid}/traits. PUT /traits/{name}
 * has no body; its path's name is checked (TRAIT_PATH) with Placement's own
 * sentence (INVALID_TRAIT), not a jsonschema message.
 */
import { z } from "zod";
import { CUSTOM_TRAIT, GENERATION, TRAIT_NAME } from "./common.js";
import { versioned } from "./versioned.js";

/** GET /traits: `name=in:A,B` or `name=startswith:P`, `associated=true|false` (values parsed by the route). */
export const LIST_TRAITS_QUERY = versioned([
  { from: "1.6", schema: z.strictObject({ name: z.string().optional(), associated: z.string().optional() }) },
]);

/** PUT /resource_providers/{uuid}/traits. */
export const PUT_PROVIDER_TRAITS = versioned([
  { from: "1.6", schema: z.strictObject({ traits: z.array(TRAIT_NAME), resource_provider_generation: GENERATION }) },
]);

/** PUT /traits/{name}: the path parameters. */
export const TRAIT_PATH = versioned([{ from: "1.6", schema: z.strictObject({ name: CUSTOM_TRAIT }) }]);

export const INVALID_TRAIT =
  'The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"';
