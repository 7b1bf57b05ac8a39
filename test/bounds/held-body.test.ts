/**
 * The bound inside the body: BodyWriter stops a body as it passes its
 * bound, and a bounded CandidatesBody sends nothing before the answer is
 * whole. No database.
 */
import { describe, expect, it } from "vitest";
import { BodyBuffers, sizeClassOf } from "../../src/http/body-buffers.js";
import { BodyWriter, type Bound } from "../../src/http/body-writer.js";
import { Microversion } from "../../src/http/microversion.js";
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import type { CandidatesBody } from "../../src/render/candidates/body.js";
import { AnswerBudget } from "../../src/render/candidates/budget.js";
import { bodyText as text, fastBody } from "../support/bodies.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import type { CandidatesResult } from "../../src/services/candidates/engine.js";
import { AnswersBusy, AnswerTooLarge } from "../../src/services/errors.js";

class TooLarge extends Error {}
const bound = (bytes: number): Bound => ({ bytes, refuse: () => new TooLarge(`past ${bytes}`) });

describe("BodyWriter with a bound", () => {
  it("takes a body of exactly the bound's size and refuses one byte more", () => {
    const w = new BodyWriter(1024, 1024, undefined, bound(3000));
    const whole = new BodyWriter(1 << 20, 1024, undefined, bound(3000));
    whole.ascii("x".repeat(3000)).within();
    expect(() => whole.ascii("x").within()).toThrow(TooLarge);
    w.ascii("x".repeat(3000)).within();
    expect(w.size).toBe(3000);
    expect(() => w.ascii("x").within()).toThrow(TooLarge);
  });

  it("stops a body that goes on past the bound while it is written, not at its end", () => {
    const w = new BodyWriter(1024, 1024, undefined, bound(10_000));
    const piece = Buffer.from("y".repeat(100));
    let written = 0;
    expect(() => {
      for (let i = 0; i < 10_000; i++) {
        w.bytes(piece);
        written += piece.length;
      }
    }).toThrow(TooLarge);
    // Checked as chunks fill: at most a chunk past the bound.
    expect(written).toBeGreaterThan(10_000);
    expect(written).toBeLessThanOrEqual(10_000 + 1024);
  });

  it("does not take a first chunk larger than the bound needs, whatever the caller expects", () => {
    const buffers = new BodyBuffers();
    const w = new BodyWriter(512 * 1024 * 1024, undefined, buffers, bound(100_000));
    expect(w.chunk.length).toBe(sizeClassOf(100_000));
  });
});

const names = { uuidOf: (id: number) => `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`, resourceClassName: () => "VCPU" };
const query = { groups: [], params: {} } as unknown as CandidatesQuery;
const emptyResult: CandidatesResult = { candidates: [], count: 0, summaries: [], ...names };

function writeCandidates(body: CandidatesBody, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    const providerId = (i % 1000) + 1;
    const resources = [{ providerId, resourceClassId: 1, amount: 1 }];
    body.candidate({ anchorRootId: providerId, resources, groups: [{ suffix: "", sameProvider: false, resources, providers: [providerId] }] }, names);
  }
}

/** An answer of `total` candidates written in slices with turns of the event loop between (as the engine does), then the end. */
async function answer(body: CandidatesBody, total: number, progress: { done: boolean }): Promise<void> {
  for (let i = 0; i < total; i += 1000) {
    writeCandidates(body, i, Math.min(1000, total - i));
    await new Promise((resolve) => setImmediate(resolve));
  }
  body.end(emptyResult);
  progress.done = true;
}


describe("a bounded CandidatesBody", () => {
  const newBody = (maxBytes: number) => fastBody(answerShape(Microversion.from("1.39")), query, { budget: new AnswerBudget(maxBytes) });

  it("holds an answer past the streaming threshold until it is whole, then gives all of it", async () => {
    // 20,000 candidates are several megabytes: without a bound the body would start to leave after the first.
    const body = newBody(64 * 1024 * 1024);
    const progress = { done: false };
    const out = await body.respond(answer(body, 20_000, progress), () => {});
    expect(progress.done).toBe(true);
    expect(JSON.parse(await text(out)).allocation_requests).toHaveLength(20_000);
  });

  it("refuses an answer past the bound with AnswerTooLarge, stopping the writing there", async () => {
    const body = newBody(1024 * 1024);
    const progress = { done: false };
    const answering = answer(body, 100_000, progress);
    const refused = await body.respond(answering, () => {}).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AnswerTooLarge);
    expect((refused as AnswerTooLarge).maxBytes).toBe(1024 * 1024);
    await expect(answering).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(progress.done).toBe(false);
    expect(body.written).toBeLessThan(100_000);
  });

  it("lets an answer leave from the threshold when the path's upper bound on it is within the bound, and stops counting it", async () => {
    const budget = new AnswerBudget(64 * 1024 * 1024);
    const body = fastBody(answerShape(Microversion.from("1.39")), query, { budget });
    const asked: number[] = [];
    body.bounded((_lengths, over) => {
      asked.push(over);
      return 16 * 1024 * 1024;
    });
    const progress = { done: false };
    const out = await body.respond(answer(body, 20_000, progress), () => {});
    expect(out).toBeInstanceOf(ReadableStream);
    expect(progress.done).toBe(false);
    expect(asked).toEqual([64 * 1024 * 1024]);
    expect(budget.writingBytes).toBe(0);
    expect(JSON.parse(await text(out)).allocation_requests).toHaveLength(20_000);
    expect(budget.writingBytes).toBe(0);
  });

  it("holds the answer until it is whole when the path's upper bound passes the bound", async () => {
    const body = newBody(64 * 1024 * 1024);
    body.bounded(() => 64 * 1024 * 1024 + 1);
    const progress = { done: false };
    const out = await body.respond(answer(body, 20_000, progress), () => {});
    expect(progress.done).toBe(true);
    expect(JSON.parse(await text(out)).allocation_requests).toHaveLength(20_000);
  });

  it("does not ask for the upper bound of an answer that is whole before it is large", async () => {
    const body = newBody(64 * 1024 * 1024);
    let asked = 0;
    body.bounded(() => asked++);
    const out = await body.respond(answer(body, 100, { done: false }), () => {});
    expect(Buffer.isBuffer(out)).toBe(true);
    expect(asked).toBe(0);
  });

  it("breaks a leaving answer that passes the bound after all (an upper bound that was wrong), sending no more than the bound", async () => {
    const maxBytes = 2 * 1024 * 1024;
    const body = newBody(maxBytes);
    body.bounded(() => 1);
    const reported: Error[] = [];
    const out = await body.respond(answer(body, 100_000, { done: false }), (e) => reported.push(e));
    expect(out).toBeInstanceOf(ReadableStream);
    let sent = 0;
    const reading = (async () => {
      for await (const chunk of out as ReadableStream<Uint8Array>) sent += chunk.length;
    })();
    await expect(reading).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(sent).toBeLessThanOrEqual(maxBytes);
    expect(reported[0]).toBeInstanceOf(AnswerTooLarge);
  });

  it("streams from the threshold as before when the bound is off (0)", async () => {
    const body = newBody(0);
    const progress = { done: false };
    const out = await body.respond(answer(body, 20_000, progress), () => {});
    expect(out).toBeInstanceOf(ReadableStream);
    expect(progress.done).toBe(false);
    expect(JSON.parse(await text(out)).allocation_requests).toHaveLength(20_000);
  });
});

describe("bounded answers written at once", () => {
  const MiB = 1024 * 1024;
  /** About `bytes` of candidates (each is about 150 bytes), with a turn of the event loop after each slice. */
  const candidatesOf = (bytes: number) => Math.ceil(bytes / 150);

  it("share a budget of twice the bound: one that would pass it is refused with AnswersBusy, and every byte counted is given back", async () => {
    const budget = new AnswerBudget(MiB);
    const newBody = () => fastBody(answerShape(Microversion.from("1.39")), query, { budget });
    // Three answers of 0.8 MiB each, written side by side: the third passes 2 MiB while the others are being written.
    const bodies = [newBody(), newBody(), newBody()];
    const progress = bodies.map(() => ({ done: false }));
    const results = await Promise.allSettled(bodies.map((b, k) => b.respond(answer(b, candidatesOf(0.8 * MiB), progress[k]), () => {})));
    const refused = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(AnswersBusy);
    expect((refused[0] as AnswersBusy).budgetBytes).toBe(2 * MiB);
    expect(budget.writingBytes).toBe(0);
    // Once the others are whole, the same answer is written in full.
    const again = newBody();
    const out = await again.respond(answer(again, candidatesOf(0.8 * MiB), { done: false }), () => {});
    expect(JSON.parse(await text(out)).allocation_requests).toHaveLength(candidatesOf(0.8 * MiB));
    expect(budget.writingBytes).toBe(0);
  });

  it("gives back the bytes of an answer refused for its own size, and of one discarded and written again", async () => {
    const budget = new AnswerBudget(MiB);
    const tooLarge = fastBody(answerShape(Microversion.from("1.39")), query, { budget });
    await expect(tooLarge.respond(answer(tooLarge, candidatesOf(3 * MiB), { done: false }), () => {})).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(budget.writingBytes).toBe(0);
    const rewritten = fastBody(answerShape(Microversion.from("1.39")), query, { budget });
    const answering = (async () => {
      writeCandidates(rewritten, 0, candidatesOf(0.5 * MiB));
      expect(budget.writingBytes).toBeGreaterThan(0);
      expect(rewritten.discard()).toBe(true);
      expect(budget.writingBytes).toBe(0);
      await answer(rewritten, 100, { done: false });
    })();
    await rewritten.respond(answering, () => {});
    expect(rewritten.written).toBe(100);
    expect(budget.writingBytes).toBe(0);
  });
});
