/**
 * The body of POST /claims (an extension beside the Placement API, the same
 * at every microversion it exists at; see docs/extensions.md). Its
 * query string is GET /allocation_candidates' (schemas/allocation-candidates.ts).
 */
import { z } from "zod";
import { PICKS } from "../services/claims-pick.js";
import { CONSUMER_TYPE, DASHED_UUID, EXTERNAL_ID } from "./common.js";
import { versioned } from "./versioned.js";

/** One claim writes at most this many consumers (each is tried candidate by candidate inside one transaction). */
export const MAX_CLAIM_CONSUMERS = 1000;

const CLAIM_BODY = z.strictObject({
  /** One instance per consumer, each a new consumer (as consumer_generation null in PUT /allocations). */
  consumers: z
    .array(
      z.strictObject({
        consumer_uuid: DASHED_UUID,
        project_id: EXTERNAL_ID,
        user_id: EXTERNAL_ID,
        consumer_type: CONSUMER_TYPE.optional(),
      }),
    )
    .min(1)
    .max(MAX_CLAIM_CONSUMERS),
  pick: z.enum(PICKS).default("pack"),
  /** Other allocation requests that still fit after the claim, as a scheduler keeps them for a reschedule. */
  alternates: z.int().min(0).max(1000).default(0),
  /** Claim every consumer or none (default); false claims as many as fit. */
  all_or_nothing: z.boolean().default(true),
});

export const POST_CLAIMS = versioned([{ from: "1.10", schema: CLAIM_BODY }]);
