/**
 * Which error responses carry `Vary: openstack-api-version`. Placement's
 * microversion middleware adds Vary only to responses that come back from
 * the application; an error raised past Placement's handlers (an unknown
 * route, a policy refusal, a content-length problem, or a NotFound from a
 * lookup the handler does not catch) passes through it and gets the version
 * header alone. Those uncaught NotFounds are the ones whose detail is the
 * lookup's own bare sentence, so they are recognised by it.
 */
import type { PlacementError } from "./errors.js";

const raisedPastHandler = new WeakSet<PlacementError>();

/** Marks an error Placement raises outside its handlers (so: no Vary). */
export function pastHandler<E extends PlacementError>(err: E): E {
  raisedPastHandler.add(err);
  return err;
}

const UNCAUGHT_NOT_FOUND = [/^No resource provider with uuid \S+ found$/, /^No such resource class \S+\.$/];

export function variesByMicroversion(err: PlacementError): boolean {
  if (raisedPastHandler.has(err) || err.status === 403) return false;
  return !(err.status === 404 && UNCAUGHT_NOT_FOUND.some((re) => re.test(err.detail)));
}
