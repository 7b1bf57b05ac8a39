/** Candidates bodies as the route makes them, for tests that write answers without the route. */
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import { CandidatesBody } from "../../src/render/candidates/body.js";
import { AnswerBudget } from "../../src/render/candidates/budget.js";
import { RenderCache } from "../../src/render/candidates/cache.js";
import { FastRenderer } from "../../src/render/candidates/fast.js";
import { ReferenceRenderer } from "../../src/render/candidates/reference.js";
import type { AnswerBytesBound, AnswerLengths } from "../../src/services/candidates/answer-bound.js";
import type { AnswerShape } from "../../src/services/candidates/answer-shape.js";
import type { Candidate } from "../../src/services/candidates/combine.js";
import type { FlatAnswer } from "../../src/services/candidates/flat-answer.js";
import type { CandidatesResult, NamesById } from "../../src/services/candidates/generate.js";
import type { CandidatesSink } from "../../src/services/candidates/paths/path.js";

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

/** A sink that hands everything to `body` and keeps the upper bound on the answer's bytes that the answering path gave (bounded), if any. */
export class BoundRecorder implements CandidatesSink {
  atMost?: AnswerBytesBound;

  constructor(private readonly body: CandidatesBody) {}

  readonly candidate = (candidate: Candidate, names: NamesById): void => this.body.candidate(candidate, names);

  end(result: CandidatesResult): void {
    this.body.end(result);
  }

  flat(answer: FlatAnswer): void {
    this.body.flat(answer);
  }

  room(): Promise<void> {
    return this.body.room();
  }

  discard(): boolean {
    return this.body.discard();
  }

  bounded(atMost: AnswerBytesBound): void {
    this.atMost = atMost;
    this.body.bounded(atMost);
  }
}

/** The bytes of an answer's text in all, of its requests (with the opening) and of its summaries (with the rest). */
export interface AnswerParts {
  all: number;
  requests: number;
  summaries: number;
}

/**
 * The parts of answer `text`, and the upper bound `atMost` puts on each
 * (weighed by `lengths`, every piece of the other part weighing nothing),
 * counted in full.
 */
export function boundedParts(text: string, atMost: AnswerBytesBound, lengths: AnswerLengths): { answer: AnswerParts; bound: AnswerParts } {
  const all = Buffer.byteLength(text);
  const requests = Buffer.byteLength(text.slice(0, text.indexOf('],"provider_summaries":{')));
  const none = () => 0;
  const everything = Number.POSITIVE_INFINITY;
  // The same weights with some pieces weighing nothing, under keys of their own (the path remembers bounds by key).
  const weighing = (key: string, changed: Partial<AnswerLengths>): AnswerLengths => ({
    key: `${lengths.key} ${key}`,
    frame: lengths.frame,
    request: lengths.request,
    allocation: (uuidBytes) => lengths.allocation(uuidBytes),
    resource: (className, amount) => lengths.resource(className, amount),
    mapping: (suffix) => lengths.mapping(suffix),
    mapped: (uuidBytes) => lengths.mapped(uuidBytes),
    summary: (...args) => lengths.summary(...args),
    quoted: (text) => lengths.quoted(text),
    ...changed,
  });
  return {
    answer: { all, requests, summaries: all - requests },
    bound: {
      all: atMost(lengths, everything),
      requests: atMost(weighing("requests", { summary: none }), everything),
      summaries: atMost(weighing("summaries", { request: 0, allocation: none, resource: none, mapping: none, mapped: none }), everything),
    },
  };
}
