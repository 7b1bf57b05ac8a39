/**
 * The fast renderer (CandidatesRenderer): an answer written as bytes as it
 * comes, from pieces encoded once. The engine's allocation requests are
 * written by candidate-writer.ts the moment each is found, its summaries by
 * summaries.ts; a flat answer by flat-body.ts, from the pieces the render
 * cache keeps per provider, or, when one of its names would need escaping,
 * by the plain renderer (reference.ts) into the same body. Uuids come from
 * the render cache's arena, taken when the answer opens and kept to its end.
 */
import type { BodyWriter } from "../../http/body-writer.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";
import type { Candidate } from "../../services/candidates/combine.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { CandidatesResult, NamesById } from "../../services/candidates/generate.js";
import { IdMap } from "../../services/candidates/id-map.js";
import type { RenderCache, UuidArena } from "./cache.js";
import { candidateWriter } from "./candidate-writer.js";
import { writeFlatAnswer } from "./flat-body.js";
import { BODY_CLOSE, COMMA, REQUESTS_OPEN, SUMMARIES_OPEN } from "./pieces.js";
import { ReferenceRenderer } from "./reference.js";
import type { AnswerLengths } from "../../services/candidates/answer-bound.js";
import { answerLengths } from "./lengths.js";
import type { CandidatesRenderer } from "./renderer.js";
import { SummaryWriter } from "./summaries.js";

export class FastRenderer implements CandidatesRenderer {
  private w?: BodyWriter;
  private arena?: UuidArena;
  /** Each provider's slot in `arena`, once looked up for this answer. */
  private readonly encoded = new IdMap<number>();
  private writeOne?: (cand: Candidate, names: NamesById) => void;
  private count = 0;
  /** The plain renderer this answer was handed to (a flat answer with names that need escaping). */
  private plain?: ReferenceRenderer;

  constructor(
    private readonly shape: AnswerShape,
    private readonly query: CandidatesQuery,
    private readonly cache: RenderCache,
  ) {}

  open(w: BodyWriter): void {
    this.w = w;
    this.arena = this.cache.arena();
    this.encoded.clear();
    this.writeOne = undefined;
    this.count = 0;
    this.plain = undefined;
  }

  candidate(cand: Candidate, names: NamesById): void {
    const w = this.w!;
    w.bytes(this.count++ > 0 ? COMMA : REQUESTS_OPEN);
    (this.writeOne ??= candidateWriter(w, this.shape, this.arena!, this.uuid))(cand, names);
  }

  summaries(r: CandidatesResult): void {
    const w = this.w!;
    if (this.count === 0) w.bytes(REQUESTS_OPEN);
    w.bytes(SUMMARIES_OPEN);
    const summaries = new SummaryWriter(this.shape, this.query, this.arena!);
    for (let k = 0; k < r.summaries.length; k++) {
      const { provider, inventories, traits } = r.summaries[k];
      if (k > 0) w.bytes(COMMA);
      const parent = provider.parentId === null ? null : this.uuid(r, provider.parentId);
      summaries.write(w, this.uuid(r, provider.id), inventories, traits, parent, this.uuid(r, provider.rootId), r.resourceClassName);
    }
  }

  flat(answer: FlatAnswer): void {
    const w = this.w!;
    const summaries = new SummaryWriter(this.shape, this.query, this.arena!);
    if (writeFlatAnswer(w, this.shape, this.query, answer, this.cache, this.arena!, summaries)) return;
    this.plain = new ReferenceRenderer(this.shape, this.query);
    this.plain.open(w);
    this.plain.flat(answer);
  }

  finish(): void {
    if (this.plain) this.plain.finish();
    else this.w!.bytes(BODY_CLOSE);
    this.w = undefined;
    this.writeOne = undefined;
  }

  lengths(): AnswerLengths {
    return answerLengths(this.shape, this.query);
  }

  /** Each provider's slot in the arena, once looked up for this answer (checking a kept one costs a pass over the uuid). */
  private readonly uuid = (names: NamesById, id: number): number => {
    let slot = this.encoded.get(id);
    if (slot === undefined) this.encoded.set(id, (slot = this.arena!.of(id, names.uuidOf(id))));
    return slot;
  };
}
