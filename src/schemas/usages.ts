/** GET /usages query (1.9), as Placement's schemas/usage.py; a consumer_type filter from 1.38. */
import { z } from "zod";
import { EXTERNAL_ID, NAME_PATTERN } from "./common.js";
import { versioned } from "./versioned.js";

const USAGES_QUERY_V1_9 = z.strictObject({ project_id: EXTERNAL_ID, user_id: EXTERNAL_ID.optional() });

/** 1.38: "all" and "unknown" are the two lower-case words allowed besides type names (Placement's pattern, unanchored `^all` included). */
const USAGES_QUERY_V1_38 = USAGES_QUERY_V1_9.extend({
  consumer_type: z
    .string()
    .regex(new RegExp(`${NAME_PATTERN.source}|^all|^unknown$`))
    .min(1)
    .max(255)
    .optional(),
});

export const USAGES_QUERY = versioned([
  { from: "1.9", schema: USAGES_QUERY_V1_9 },
  { from: "1.38", schema: USAGES_QUERY_V1_38 },
]);
