/**
 * One consumer's parsed allocation body in the service's terms, shared by the
 * allocation writes and the reshaper.
 */
import type { Config } from "../config.js";
import type { AppContext } from "../http/context.js";
import type { ConsumerAllocations } from "../services/allocations.js";
import type { ParsedConsumerBody } from "../schemas/allocations.js";

/** Turns one consumer's parsed body into the service's terms for the request's microversion. */
export function toConsumerWrite(c: AppContext, config: Config, consumerUuid: string, body: ParsedConsumerBody): ConsumerAllocations {
  const mv = c.get("microversion");
  // Before 1.8 nobody said whose allocations these are: Placement files them under configurable placeholder ids.
  const complete = body.project_id !== undefined;
  return {
    consumerUuid,
    projectId: complete ? body.project_id! : config.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
    userId: complete ? body.user_id! : config.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID,
    generation: mv.atLeast("1.28") ? (body.consumer_generation ?? null) : undefined,
    consumerType: mv.atLeast("1.38") ? body.consumer_type : undefined,
    allocations: Object.fromEntries(Object.entries(body.allocations).map(([rp, a]) => [rp, a.resources])),
  };
}
