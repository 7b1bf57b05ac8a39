/** GET /allocation_candidates (from 1.10): the engine's answer shaped per microversion. */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import type { AppContext, AppDeps, AppEnv } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { queryPairs } from "../query/query-string.js";
import { parseCandidatesQuery, type CandidatesQuery } from "../query/request-groups.js";
import { findCandidates, type CandidatesResult } from "../services/candidates/engine.js";

export function allocationCandidateRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/allocation_candidates", {
    GET: async (c) => {
      requireMicroversion(c, "1.10");
      authorize(c, "placement:allocation_candidates:list");
      const query = parseCandidatesQuery(queryPairs(c.req.url), c.get("microversion"));
      const mv = c.get("microversion");
      // One read-only snapshot: the narrowing queries and the tree loads must agree.
      const result = await deps.db.transaction(
        (tx) =>
          findCandidates(tx, query, {
            nestedAware: mv.atLeast("1.29"),
            randomize: deps.config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
            maxCandidates: deps.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
            strategy: deps.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
          }),
        { isolationLevel: "repeatable read", accessMode: "read only" },
      );
      setLastModified(c, new Date());
      return c.body(body(render(c, query, result), result.candidates.length), 200, { "content-type": "application/json" });
    },
  });
  return app;
}

/**
 * The response body written straight as JSON text in one pass over the
 * candidates and the summaries: no intermediate objects per candidate, and
 * each provider's quoted uuid and each class's quoted name made once. It is
 * produced piece by piece (one piece per candidate or summary), so a large
 * answer can be streamed without ever holding the whole text.
 */
function* render(c: AppContext, query: CandidatesQuery, r: CandidatesResult): Generator<string> {
  const mv = c.get("microversion");
  const dictForm = mv.atLeast("1.12");
  const withMappings = mv.atLeast("1.34");
  const quotedUuid = new Map<number, string>();
  const uuidJson = (id: number) => {
    let q = quotedUuid.get(id);
    if (q === undefined) quotedUuid.set(id, (q = JSON.stringify(r.uuidOf(id))));
    return q;
  };
  const quotedClass = new Map<number, string>();
  const classJson = (id: number) => {
    let q = quotedClass.get(id);
    if (q === undefined) quotedClass.set(id, (q = JSON.stringify(r.resourceClassName(id))));
    return q;
  };

  yield '{"allocation_requests":[';
  let first = true;
  for (const cand of r.candidates) {
    // Resources grouped by provider, providers in order of first appearance.
    const order: number[] = [];
    const byProvider = new Map<number, string[]>();
    for (const rr of cand.resources) {
      let list = byProvider.get(rr.providerId);
      if (!list) {
        byProvider.set(rr.providerId, (list = []));
        order.push(rr.providerId);
      }
      list.push(`${classJson(rr.resourceClassId)}:${rr.amount}`);
    }
    const sep = first ? "" : ",";
    first = false;
    if (!dictForm) {
      const allocations = order.map((p) => `{"resource_provider":{"uuid":${uuidJson(p)}},"resources":{${byProvider.get(p)!.join(",")}}}`);
      yield `${sep}{"allocations":[${allocations.join(",")}]}`;
      continue;
    }
    const allocations = order.map((p) => `${uuidJson(p)}:{"resources":{${byProvider.get(p)!.join(",")}}}`);
    let mappings = "";
    if (withMappings) {
      const maps: string[] = [];
      for (const [suffix, providers] of cand.mappings) maps.push(`${JSON.stringify(suffix)}:[${providers.map(uuidJson).join(",")}]`);
      mappings = `,"mappings":{${maps.join(",")}}`;
    }
    yield `${sep}{"allocations":{${allocations.join(",")}}${mappings}}`;
  }
  yield '],"provider_summaries":{';

  const withTraits = mv.atLeast("1.17");
  const allClasses = mv.atLeast("1.27");
  const withTree = mv.atLeast("1.29");
  const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  first = true;
  for (const s of r.summaries) {
    const resources = s.inventories
      .filter((inv) => allClasses || requested.has(inv.resourceClass))
      .map((inv) => `${JSON.stringify(inv.resourceClass)}:{"capacity":${inv.capacity},"used":${inv.used}}`);
    const traits = withTraits ? `,"traits":${JSON.stringify(s.traits)}` : "";
    const tree = withTree
      ? `,"parent_provider_uuid":${JSON.stringify(r.parentUuidOf(s.provider))},"root_provider_uuid":${JSON.stringify(r.rootUuidOf(s.provider))}`
      : "";
    yield `${first ? "" : ","}${uuidJson(s.provider.id)}:{"resources":{${resources.join(",")}}${traits}${tree}}`;
    first = false;
  }
  yield "}}";
}

/** Above this many candidates the body is streamed in chunks rather than built whole (bounds memory for huge answers). */
const STREAM_ABOVE = 2000;
const CHUNK_CHARS = 64 * 1024;

function body(pieces: Generator<string>, candidates: number): string | ReadableStream<Uint8Array> {
  if (candidates <= STREAM_ABOVE) return [...pieces].join("");
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      let chunk = "";
      for (let next = pieces.next(); ; next = pieces.next()) {
        if (next.done) {
          if (chunk) controller.enqueue(encoder.encode(chunk));
          controller.close();
          return;
        }
        chunk += next.value;
        if (chunk.length >= CHUNK_CHARS) break;
      }
      controller.enqueue(encoder.encode(chunk));
    },
  });
}
