/**
 * GET /changes?since=CURSOR&timeout=SECONDS (an extension): the change feed,
 * a long poll. Without `since`, the current cursor: a client takes it, reads
 * the state it caches, then follows the feed from it. With `since`, the
 * changes committed after it in commit order, waiting up to `timeout`
 * seconds for the first one; `next` is the cursor to ask from next time.
 */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { declareRoute } from "../http/routing.js";
import { queryPairs, validateQuery } from "../query/query-string.js";
import { CHANGES_QUERY } from "../schemas/changes.js";
import { changesSince, currentCursor, type ProviderChange } from "../services/changes.js";

/** How often a waiting reader looks again without a notification (one lost with a dropped connection). */
const POLL_SLICE_MS = 1000;

function shape(change: ProviderChange) {
  const head = { cursor: change.cursor, resource_provider_uuid: change.providerUuid };
  return change.state ? { ...head, deleted: false, ...change.state } : { ...head, deleted: true };
}

export function changeRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const notifier = deps.services.changes;
  declareRoute(app, "/changes", {
    GET: async (c) => {
      authorize(c, "placement:changes:list");
      const query = validateQuery(CHANGES_QUERY.at(c.get("microversion")), queryPairs(c.req.url));
      if (query.since === undefined) return c.json({ changes: [], next: await currentCursor(deps.db) });
      const since = query.since;
      const limit = query.limit ?? 1000;
      const deadline = performance.now() + (query.timeout ?? 0) * 1000;
      // Subscribed before the first read, so a commit between the read and the wait still wakes it.
      const subscription = deadline > performance.now() ? await notifier.subscribe() : undefined;
      try {
        for (;;) {
          const changes = await changesSince(deps.db, since, limit);
          const left = deadline - performance.now();
          if (changes.length > 0 || left <= 0 || !subscription) {
            return c.json({ changes: changes.map(shape), next: changes.length > 0 ? changes[changes.length - 1].cursor : since });
          }
          await subscription.wait(since, Math.min(left, POLL_SLICE_MS));
        }
      } finally {
        subscription?.close();
      }
    },
  });
  return app;
}
