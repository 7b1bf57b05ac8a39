/**
 * Last-Modified and Cache-Control, which Placement sends from microversion
 * 1.15 on every successful GET (and some writes): the newest updated_at (or
 * created_at) among the objects in the response, or now when there are none.
 */
import type { AppContext } from "./context.js";

export interface Timestamped {
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** The newest of the objects' timestamps; now when the list is empty. */
export function newestTimestamp(objects: Iterable<Timestamped>): Date {
  let newest: Date | undefined;
  for (const o of objects) {
    const t = o.updatedAt ?? o.createdAt;
    if (t && (!newest || t > newest)) newest = t;
  }
  return newest ?? new Date();
}

/** From 1.15: Cache-Control, and Last-Modified unless `when` is null (Placement then sends none). */
export function setLastModified(c: AppContext, when: Date | null): void {
  if (!c.get("microversion").atLeast("1.15")) return;
  if (when) c.header("last-modified", when.toUTCString());
  c.header("cache-control", "no-cache");
}
