/**
 * The answer-size bound (PLACEMENT_MAX_ANSWER_BYTES) and the budget the
 * bounded answers being written at once share, one per app (createApp makes
 * it). While an answer is written its bytes and the engine's state for it
 * are held; a bound on each answer alone left a worker answering many large
 * queries at once to run out of heap. So each bounded answer counts its
 * bytes as its chunks fill, until it is whole or refused, against a budget
 * of twice the bound (an answer at its bound leaves as much to all the
 * others), and one that would pass the budget is refused with AnswersBusy.
 * An answer shown to fit its bound before it is whole leaves as it is
 * written (render/candidates/body.ts) and stops counting: its chunks are
 * dropped as they are sent.
 *
 * Not part of the render cache (cache.ts): the cache keeps memory for reuse
 * and may drop any of it at any time without changing an answer, where this
 * is a count of what answers in flight hold, exact while they are written,
 * and it decides whether an answer is refused. It holds no memory to release.
 */
import type { Bound } from "../../http/body-writer.js";
import { AnswersBusy, AnswerTooLarge } from "../../services/errors.js";

/** The bound of one answer, and how it gives back the bytes it counted. */
export interface AnswerBound extends Bound {
  /** The answer is whole, refused or dropped: its bytes no longer count (again after more were counted: each call gives back what was counted since). */
  release(): void;
  /**
   * The answer leaves as it is written (it was shown to fit the bound): what
   * it counted is given back and its chunks no longer count, since each
   * leaves as it fills.
   */
  leaving(): void;
}

export class AnswerBudget {
  private writing = 0;

  /** `maxBytes`: the most bytes one answer may have (0: no bound, and no budget). */
  constructor(readonly maxBytes: number) {}

  /** Bytes of bounded answers being written now. */
  get writingBytes(): number {
    return this.writing;
  }

  /** The bound of an answer about to be written (undefined when answers are not bounded). */
  bound(): AnswerBound | undefined {
    const maxBytes = this.maxBytes;
    if (maxBytes <= 0) return undefined;
    const budget = 2 * maxBytes;
    let counted = 0;
    let leaving = false;
    const release = () => {
      this.writing -= counted;
      counted = 0;
    };
    return {
      bytes: maxBytes,
      refuse: () => new AnswerTooLarge(maxBytes),
      filled: (bytes) => {
        if (leaving) return;
        if (this.writing + bytes > budget) throw new AnswersBusy(budget);
        this.writing += bytes;
        counted += bytes;
      },
      release,
      leaving: () => {
        release();
        leaving = true;
      },
    };
  }
}
