/**
 * The flat view's path: on a flat cloud (every provider a tree of one, none
 * sharing), the whole answer from one pass over the copy's providers
 * (flat-answer.ts), handed to the sink at once. It declines a cloud with
 * trees or sharing providers, and the requests the pass cannot answer
 * (flatAnswerTakes: a resourceless group).
 */
import { flatAnswer, flatAnswerTakes } from "../flat-answer.js";
import type { ViewPath } from "./path.js";

export const flatViewPath: ViewPath = {
  name: "flat-view",
  over: "view",
  take(read, { query, limit, engine, sink }) {
    if (!read.flat || !flatAnswerTakes(query)) return undefined;
    // Made now, within the read: the copy may change once the read is over.
    const answer = flatAnswer(read, query, { limit, randomize: engine.randomize });
    return async () => {
      sink.flat(answer);
      return true;
    };
  },
};
