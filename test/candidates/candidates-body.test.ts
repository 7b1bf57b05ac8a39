/** The answer's body as the service's sink, whole or leaving while the engine still works: no database. */
import { describe, expect, it } from "vitest";
import type { CandidatesBody } from "../../src/render/candidates/body.js";
import { fastBody } from "../support/bodies.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { Microversion } from "../../src/http/microversion.js";
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import type { CandidatesResult } from "../../src/services/candidates/engine.js";

const names = { uuidOf: (id: number) => `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`, resourceClassName: () => "VCPU" };
const query = { groups: [], params: {} } as unknown as CandidatesQuery;
const emptyResult: CandidatesResult = { candidates: [], count: 0, summaries: [], ...names };

const newBody = () => fastBody(answerShape(Microversion.from("1.39")), query);

function writeCandidate(body: CandidatesBody, i: number): void {
  const providerId = (i % 1000) + 1;
  const resources = [{ providerId, resourceClassId: 1, amount: 1 }];
  body.candidate({ anchorRootId: providerId, resources, groups: [{ suffix: "", sameProvider: false, resources, providers: [providerId] }] }, names);
}

/**
 * Starts respond() on an answer that writes candidates until the body starts
 * to leave, then runs `finish` (the rest of the service's work) as its end.
 */
async function streamed(body: CandidatesBody, finish: () => void, onError: (e: Error) => void = () => {}) {
  let started!: () => void;
  const leaving = new Promise<void>((resolve) => (started = resolve));
  let streaming = false;
  const answering = (async () => {
    for (let i = 0; ; i++) {
      writeCandidate(body, i);
      if (i % 1000 === 0) {
        await new Promise((resolve) => setImmediate(resolve));
        if (streaming) break;
      }
    }
    await leaving;
    finish();
  })();
  const response = body.respond(answering, onError).then((r) => {
    streaming = true;
    started();
    return r;
  });
  const out = await response;
  expect(out).toBeInstanceOf(ReadableStream);
  return out as ReadableStream<Uint8Array>;
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString("latin1");
}

describe("CandidatesBody.respond", () => {
  it("gives a small answer whole, as one buffer, once the service is done", async () => {
    const body = newBody();
    const answering = (async () => {
      await Promise.resolve();
      writeCandidate(body, 0);
      body.end(emptyResult);
    })();
    const out = await body.respond(answering, () => {});
    expect(Buffer.isBuffer(out)).toBe(true);
    expect(JSON.parse((out as Buffer).toString("latin1")).allocation_requests).toHaveLength(1);
  });

  it("rejects, sending nothing, when the service fails before the body is large", async () => {
    const body = newBody();
    await expect(body.respond(Promise.reject(new Error("no such trait")), () => {})).rejects.toThrow("no such trait");
  });

  it("starts to stream once large and closes the stream with the summaries once the service is done", async () => {
    const body = newBody();
    const text = await readAll(await streamed(body, () => body.end(emptyResult)));
    const parsed = JSON.parse(text);
    expect(parsed.allocation_requests.length).toBeGreaterThan(1000);
    expect(parsed.provider_summaries).toEqual({});
  });

  it("aborts the stream and reports the failure when the service fails after the body started to leave", async () => {
    const body = newBody();
    const reported: Error[] = [];
    const stream = await streamed(
      body,
      () => {
        throw new Error("connection lost");
      },
      (e) => reported.push(e),
    );
    await expect(readAll(stream)).rejects.toThrow("connection lost");
    expect(reported.map((e) => e.message)).toEqual(["connection lost"]);
  });

  it("aborts the stream when writing the summaries fails, instead of leaving it open", async () => {
    const body = newBody();
    const broken = { candidates: [], count: 0, summaries: [{ provider: { id: 1 }, inventories: null, traits: [] }], ...names } as unknown as CandidatesResult;
    const reported: Error[] = [];
    await expect(readAll(await streamed(body, () => body.end(broken), (e) => reported.push(e)))).rejects.toThrow();
    expect(reported).toHaveLength(1);
  });
});

describe("CandidatesBody.discard", () => {
  it("drops what was written before the body left, so the answer is written again from the start", async () => {
    const body = newBody();
    const answering = (async () => {
      await Promise.resolve();
      for (let i = 0; i < 3; i++) writeCandidate(body, i);
      expect(body.discard()).toBe(true);
      writeCandidate(body, 7);
      body.end(emptyResult);
    })();
    const out = await body.respond(answering, () => {});
    expect(body.written).toBe(1);
    const parsed = JSON.parse((out as Buffer).toString("latin1"));
    expect(parsed.allocation_requests).toHaveLength(1);
    expect(Object.keys(parsed.allocation_requests[0].allocations)).toEqual([names.uuidOf(8)]);
  });

  it("still starts the stream once the rewritten answer is large", async () => {
    const body = newBody();
    const answering = (async () => {
      await Promise.resolve();
      writeCandidate(body, 0);
      expect(body.discard()).toBe(true);
      for (let i = 0; i < 20_000; i++) writeCandidate(body, i);
      // The stream began during the writes: what has left cannot be taken back.
      await new Promise((resolve) => setImmediate(resolve));
      expect(body.discard()).toBe(false);
      body.end(emptyResult);
    })();
    const out = await body.respond(answering, () => {});
    expect(out).toBeInstanceOf(ReadableStream);
    const parsed = JSON.parse(await readAll(out as ReadableStream<Uint8Array>));
    expect(parsed.allocation_requests).toHaveLength(20_000);
  });
});
