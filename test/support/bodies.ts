/** Candidates bodies as the route makes them, for tests that write answers without the route. */
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import { CandidatesBody } from "../../src/render/candidates/body.js";
import { AnswerBudget } from "../../src/render/candidates/budget.js";
import { RenderCache } from "../../src/render/candidates/cache.js";
import { FastRenderer } from "../../src/render/candidates/fast.js";
import { ReferenceRenderer } from "../../src/render/candidates/reference.js";
import type { AnswerShape } from "../../src/services/candidates/answer-shape.js";

/** A body written by the fast renderer, over `cache` (a new one by default), bounded by `budget` when given. */
export function fastBody(shape: AnswerShape, query: CandidatesQuery, options: { cache?: RenderCache; budget?: AnswerBudget } = {}): CandidatesBody {
  const cache = options.cache ?? new RenderCache();
  return new CandidatesBody(new FastRenderer(shape, query, cache), cache, options.budget);
}

/** A body written by the plain reference renderer, refusing answers longer than `maxBytes` (0: no bound). */
export function referenceBody(shape: AnswerShape, query: CandidatesQuery, maxBytes = 0): CandidatesBody {
  return new CandidatesBody(new ReferenceRenderer(shape, query), new RenderCache(), new AnswerBudget(maxBytes));
}

/** A response body as respond() gives it, whole or streamed, as text. */
export async function bodyText(out: Buffer | ReadableStream<Uint8Array>): Promise<string> {
  if (Buffer.isBuffer(out)) return out.toString("utf8");
  const chunks: Uint8Array[] = [];
  for await (const chunk of out) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}
