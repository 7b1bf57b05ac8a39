/**
 * GET /allocation_candidates on a read replica when one is fit (db/read-replicas.ts
 * says why this read may be stale and when a standby is fit). A standby that
 * fails the read for being unavailable, or cancels it for a conflict with
 * recovery (40001 on a hot standby), has the read run again on the primary,
 * provided nothing of the answer has left for the client yet (the sink drops
 * what the standby wrote, however many candidates that was); the client sees
 * an answer, not a 503, for a standby that went away.
 */
import type { Db } from "../db/database.js";
import type { ReadReplicas } from "../db/read-replicas.js";
import { sqlStateMeaning } from "../db/sql-state.js";
import type { CandidatesQuery } from "../query/request-groups.js";
import type { AnswerShape } from "./candidates/answer-shape.js";
import type { AnswerOrder, CandidatesPath, CandidatesService, CandidatesSink } from "./candidates/service.js";

export type CandidatesAnswerer = Pick<CandidatesService, "answer" | "readView">;

export class ReplicaRoutedCandidates implements CandidatesAnswerer {
  /** One service per standby: each keeps the cloud view it read there. */
  private readonly onStandby = new Map<Db, CandidatesService>();

  constructor(
    private readonly onPrimary: CandidatesService,
    private readonly replicas: ReadReplicas,
    private readonly serviceOn: (db: Db) => CandidatesService,
  ) {}

  /** The primary's view: explaining an answer is an operator's question, not the load a standby takes. */
  readView: CandidatesService["readView"] = (wanted, use) => this.onPrimary.readView(wanted, use);

  async answer(query: CandidatesQuery, shape: AnswerShape, sink: CandidatesSink, order?: AnswerOrder): Promise<CandidatesPath | undefined> {
    const target = this.replicas.pick();
    if (!target.replica) {
      this.replicas.served("primary");
      return this.onPrimary.answer(query, shape, sink, order);
    }
    let service = this.onStandby.get(target.db);
    if (!service) this.onStandby.set(target.db, (service = this.serviceOn(target.db)));
    try {
      const path = await service.answer(query, shape, sink, order);
      this.replicas.served("replica");
      return path;
    } catch (err) {
      const meaning = sqlStateMeaning(err);
      if (meaning !== "unavailable" && meaning !== "retry") throw err;
      if (meaning === "unavailable") target.unavailable(err);
      if (!sink.discard()) throw err;
      this.replicas.served("primary");
      return this.onPrimary.answer(query, shape, sink, order);
    }
  }
}
