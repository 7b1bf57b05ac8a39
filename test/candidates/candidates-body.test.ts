/** The general answer's body when it leaves while the engine still works: no database. */
import { describe, expect, it } from "vitest";
import { CandidatesBody } from "../../src/routes/candidates-body.js";
import { responseShape } from "../../src/routes/candidates-shape.js";
import { Microversion } from "../../src/http/microversion.js";
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import type { CandidatesResult } from "../../src/services/candidates/engine.js";

const names = { uuidOf: (id: number) => `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`, resourceClassName: () => "VCPU" };

/** A body with enough candidates written to pass the point where it may start to leave. */
async function largeBody(): Promise<CandidatesBody> {
  const body = new CandidatesBody(responseShape(Microversion.from("1.39")));
  let large = false;
  void body.whenLarge().then(() => (large = true));
  for (let i = 0; !large; i++) {
    const providerId = (i % 1000) + 1;
    const resources = [{ providerId, resourceClassId: 1, amount: 1 }];
    body.candidate({ anchorRootId: providerId, resources, groups: [{ suffix: "", sameProvider: false, resources, providers: [providerId] }] }, names);
    if (i % 1000 === 0) await Promise.resolve();
  }
  return body;
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString("latin1");
}

describe("CandidatesBody.streamUntil", () => {
  it("closes the stream with the summaries once the engine is done", async () => {
    const body = await largeBody();
    const result: CandidatesResult = { candidates: [], count: 0, summaries: [], ...names };
    const query = { groups: [], params: {} } as unknown as CandidatesQuery;
    const text = await readAll(body.streamUntil(query, Promise.resolve(result), () => {}));
    const parsed = JSON.parse(text);
    expect(parsed.allocation_requests.length).toBeGreaterThan(1000);
    expect(parsed.provider_summaries).toEqual({});
  });

  it("aborts the stream and reports the failure when the engine fails after the body started to leave", async () => {
    const body = await largeBody();
    const reported: Error[] = [];
    const stream = body.streamUntil({} as CandidatesQuery, Promise.reject(new Error("connection lost")), (e) => reported.push(e));
    await expect(readAll(stream)).rejects.toThrow("connection lost");
    expect(reported.map((e) => e.message)).toEqual(["connection lost"]);
  });

  it("aborts the stream when writing the summaries fails, instead of leaving it open", async () => {
    const body = await largeBody();
    const broken = { candidates: [], count: 0, summaries: [{ provider: { id: 1 }, inventories: null, traits: [] }], ...names } as unknown as CandidatesResult;
    const query = { groups: [], params: {} } as unknown as CandidatesQuery;
    const reported: Error[] = [];
    await expect(readAll(body.streamUntil(query, Promise.resolve(broken), (e) => reported.push(e)))).rejects.toThrow();
    expect(reported).toHaveLength(1);
  });
});

