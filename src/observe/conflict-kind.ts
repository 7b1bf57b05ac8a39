/** Why a request was answered 409, for placement_conflicts_total: read from the domain error, never from wording. */
import { DomainError, type AnyDomainError } from "../services/errors.js";
import type { ConflictKind } from "./metrics.js";

export function conflictKind(err: unknown): ConflictKind {
  // Not a domain error: a deadlock or serialization failure that ran out of retries.
  if (!(err instanceof DomainError)) return "concurrent_update";
  const e = err as AnyDomainError;
  switch (e.kind) {
    case "CapacityExceeded":
      return "capacity";
    case "GenerationConflict":
      return e.stale.of === "consumer" ? "consumer_generation" : "provider_generation";
    case "ConcurrentUpdate":
      return "concurrent_update";
    case "ClaimRefused":
      return "claim_refused";
    default:
      return "other";
  }
}
