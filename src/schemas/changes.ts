/** GET /changes query (an extension, the same at every microversion): where to read from, how long to wait, how much to take. */
import { z } from "zod";
import { versioned } from "./versioned.js";

/** The longest a reader may wait in one request. */
export const MAX_WAIT_SECONDS = 60;

const DIGITS = z.string().regex(/^(0|[1-9][0-9]{0,15})$/).transform(Number);

export const CHANGES_QUERY = versioned([
  {
    from: "1.0",
    schema: z.strictObject({
      since: DIGITS.optional(),
      timeout: DIGITS.pipe(z.number().max(MAX_WAIT_SECONDS)).optional(),
      /** Transactions per answer (each with all of its changed providers). */
      limit: DIGITS.pipe(z.number().min(1).max(10000)).optional(),
    }),
  },
]);
