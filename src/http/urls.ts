/** URLs the API hands out (Location headers, links). */
import type { AppContext } from "./context.js";

export function providerUrl(uuid: string): string {
  return `/resource_providers/${uuid}`;
}

/** Location headers are absolute, as webob makes them. */
export function absoluteUrl(c: AppContext, path: string): string {
  return new URL(path, c.req.url).toString();
}
