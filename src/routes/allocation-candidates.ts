/** GET /allocation_candidates (from 1.10): the engine's answer shaped per microversion. */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import type { AppDeps, AppEnv } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { queryPairs } from "../query/query-string.js";
import { parseCandidatesQuery, type CandidatesQuery } from "../query/request-groups.js";
import type { Candidate } from "../services/candidates/combine.js";
import { checkNames, findCandidates, type CandidatesResult } from "../services/candidates/engine.js";
import { flatCandidates, flatEligible } from "../services/candidates/flat-sql.js";
import { responseShape, type ResponseShape } from "./candidates-shape.js";
import { renderFlatBody } from "./flat-candidates-body.js";
import type { Names } from "../services/candidates/generate.js";

export function allocationCandidateRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/allocation_candidates", {
    GET: async (c) => {
      requireMicroversion(c, "1.10");
      authorize(c, "placement:allocation_candidates:list");
      const query = parseCandidatesQuery(queryPairs(c.req.url), c.get("microversion"));
      const mv = c.get("microversion");
      const shape = responseShape(mv);
      const { PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: randomize, PLACEMENT_MAX_ALLOCATION_CANDIDATES: max } = deps.config;
      // Flat deployments (most clouds) are answered by one prepared statement, outside any transaction.
      if (flatEligible(query, randomize)) {
        const cap = Math.min(query.params.limit ?? Infinity, max > 0 ? max : Infinity);
        const flat = await flatCandidates(deps.db, query, Number.isFinite(cap) ? cap : undefined);
        checkNames(query, flat.names);
        if (!flat.names.hasTrees && !flat.names.hasSharing) {
          setLastModified(c, new Date());
          return c.body(renderFlatBody(shape, query, flat), 200, { "content-type": "application/json" });
        }
      }
      // Candidates are written as they are found (JSON text is far smaller than the objects).
      const written: string[] = [];
      const writeCandidate = candidateWriter(shape);
      // One read-only snapshot: the narrowing queries and the tree loads must agree.
      const result = await deps.db.transaction(
        (tx) =>
          findCandidates(tx, query, {
            nestedAware: mv.atLeast("1.29"),
            randomize,
            maxCandidates: max,
            strategy: deps.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
            onCandidate: (cand, names) => written.push(writeCandidate(cand, names)),
          }),
        { isolationLevel: "repeatable read", accessMode: "read only" },
      );
      // With randomize the engine shuffles and returns the list instead.
      for (const cand of result.candidates) written.push(writeCandidate(cand, result));
      setLastModified(c, new Date());
      return c.body(body(render(shape, query, result, written), result.count), 200, { "content-type": "application/json" });
    },
  });
  return app;
}

/**
 * One allocation request as JSON text, without intermediate objects, each
 * provider's quoted uuid and each class's quoted name made once per request.
 */
function candidateWriter(shape: ResponseShape): (cand: Candidate, names: Names) => string {
  const quotedUuid = new Map<number, string>();
  const quotedClass = new Map<number, string>();
  return (cand, names) => {
    const uuidJson = (id: number) => {
      let q = quotedUuid.get(id);
      if (q === undefined) quotedUuid.set(id, (q = JSON.stringify(names.uuidOf(id))));
      return q;
    };
    const classJson = (id: number) => {
      let q = quotedClass.get(id);
      if (q === undefined) quotedClass.set(id, (q = JSON.stringify(names.resourceClassName(id))));
      return q;
    };
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
    if (!shape.dictForm) {
      const allocations = order.map((p) => `{"resource_provider":{"uuid":${uuidJson(p)}},"resources":{${byProvider.get(p)!.join(",")}}}`);
      return `{"allocations":[${allocations.join(",")}]}`;
    }
    const allocations = order.map((p) => `${uuidJson(p)}:{"resources":{${byProvider.get(p)!.join(",")}}}`);
    let mappings = "";
    if (shape.mappings) {
      const maps: string[] = [];
      for (const [suffix, providers] of cand.mappings) maps.push(`${JSON.stringify(suffix)}:[${providers.map(uuidJson).join(",")}]`);
      mappings = `,"mappings":{${maps.join(",")}}`;
    }
    return `{"allocations":{${allocations.join(",")}}${mappings}}`;
  };
}

/** The whole body, piece by piece: the written candidates, then the summaries. */
function* render(shape: ResponseShape, query: CandidatesQuery, r: CandidatesResult, written: string[]): Generator<string> {
  yield '{"allocation_requests":[';
  for (let i = 0; i < written.length; i++) yield i === 0 ? written[i] : `,${written[i]}`;
  yield '],"provider_summaries":{';
  const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  let first = true;
  for (const s of r.summaries) {
    const resources = s.inventories
      .filter((inv) => shape.allClasses || requested.has(inv.resourceClass))
      .map((inv) => `${JSON.stringify(inv.resourceClass)}:{"capacity":${inv.capacity},"used":${inv.used}}`);
    const traits = shape.traits ? `,"traits":${JSON.stringify(s.traits)}` : "";
    const tree = shape.tree
      ? `,"parent_provider_uuid":${JSON.stringify(r.parentUuidOf(s.provider))},"root_provider_uuid":${JSON.stringify(r.rootUuidOf(s.provider))}`
      : "";
    yield `${first ? "" : ","}${JSON.stringify(r.uuidOf(s.provider.id))}:{"resources":{${resources.join(",")}}${traits}${tree}}`;
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
