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
import { BodyWriter } from "../http/body-writer.js";
import { BODY_CLOSE, COMMA, REQUESTS_OPEN, responseShape, SUMMARIES_OPEN, type ResponseShape } from "./candidates-shape.js";
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
      // Candidates are written as bytes as they are found (see BodyWriter: a huge answer stays off the heap).
      const w = new BodyWriter().bytes(REQUESTS_OPEN);
      const writeCandidate = candidateWriter(shape);
      let written = 0;
      const write = (cand: Candidate, names: Names) => {
        if (written++ > 0) w.bytes(COMMA);
        w.ascii(writeCandidate(cand, names));
      };
      // One read-only snapshot: the narrowing queries and the tree loads must agree.
      const result = await deps.db.transaction(
        (tx) =>
          findCandidates(tx, query, {
            nestedAware: mv.atLeast("1.29"),
            randomize,
            maxCandidates: max,
            strategy: deps.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
            onCandidate: write,
          }),
        { isolationLevel: "repeatable read", accessMode: "read only" },
      );
      // With randomize the engine shuffles and returns the list instead.
      for (const cand of result.candidates) write(cand, result);
      writeSummaries(w.bytes(SUMMARIES_OPEN), shape, query, result);
      setLastModified(c, new Date());
      w.bytes(BODY_CLOSE);
      return c.body(w.size > STREAM_ABOVE_BYTES ? w.stream() : w.finish(), 200, { "content-type": "application/json" });
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

/** The provider summaries of every provider the candidates use. */
function writeSummaries(w: BodyWriter, shape: ResponseShape, query: CandidatesQuery, r: CandidatesResult): void {
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
    w.ascii(`${first ? "" : ","}${JSON.stringify(r.uuidOf(s.provider.id))}:{"resources":{${resources.join(",")}}${traits}${tree}}`);
    first = false;
  }
}

/** Above this size the body is streamed chunk by chunk rather than copied into one buffer. */
const STREAM_ABOVE_BYTES = 4 * 1024 * 1024;
