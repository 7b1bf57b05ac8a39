/**
 * Which error responses carry `Vary: openstack-api-version`. Placement's
 * microversion middleware adds Vary only to responses that come back from
 * the application; an error raised past Placement's handlers (an unknown
 * route, a policy refusal, a content-length problem, or a NotFound from a
 * lookup the handler does not catch: marked in the error table) passes
 * through it and gets the version header alone.
 */
import type { PlacementError } from "./errors.js";

/** Marks an error Placement raises outside its handlers (so: no Vary). */
export function pastHandler<E extends PlacementError>(err: E): E {
  err.raisedPastHandler = true;
  return err;
}

export function variesByMicroversion(err: PlacementError): boolean {
  return !err.raisedPastHandler && err.status !== 403;
}
