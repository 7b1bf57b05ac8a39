/**
 * The plain reference renderer (src/render/candidates/reference.ts) on its
 * own: what a JavaScript object would get wrong (a suffix of digits listed
 * first) it keeps in the groups' order, and it refuses an answer past the
 * answer-size bound as the fast renderer does. Its bytes against every
 * path's are test/candidates/contract.test.ts. No database.
 */
import { describe, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import type { CandidatesQuery } from "../../src/query/request-groups.js";
import { stringify } from "../../src/render/candidates/reference.js";
import { bodyText, referenceBody } from "../support/bodies.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import type { Candidate } from "../../src/services/candidates/combine.js";
import type { CandidatesResult } from "../../src/services/candidates/engine.js";
import { AnswerTooLarge } from "../../src/services/errors.js";

const CLASSES = ["", "VCPU", "MEMORY_MB"];
const uuidOf = (id: number) => `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`;
const names = { uuidOf, resourceClassName: (id: number) => CLASSES[id] };
const result: CandidatesResult = { candidates: [], count: 0, summaries: [], ...names };
const query = { groups: [], params: {} } as unknown as CandidatesQuery;

/** A candidate of two groups, the unsuffixed one on provider 1 and group `1` on provider 2 (only the fields a renderer reads). */
const candidate = {
  anchorRootId: 1,
  resources: [
    { providerId: 1, resourceClassId: 1, amount: 2 },
    { providerId: 2, resourceClassId: 2, amount: 512 },
  ],
  groups: [
    { suffix: "", sameProvider: false, resources: [{ providerId: 1, resourceClassId: 1, amount: 2 }], providers: [1] },
    { suffix: "1", sameProvider: true, resources: [{ providerId: 2, resourceClassId: 2, amount: 512 }], providers: [2] },
  ],
} as unknown as Candidate;

async function rendered(maxBytes: number, count: number): Promise<string> {
  const body = referenceBody(answerShape(Microversion.from("1.39")), query, maxBytes);
  const answering = (async () => {
    for (let i = 0; i < count; i++) body.candidate(candidate, names);
    body.end(result);
  })();
  return bodyText(await body.respond(answering, () => {}));
}

describe("the reference renderer", () => {
  it("keeps the groups' order in mappings, a suffix of digits included", async () => {
    const text = await rendered(0, 1);
    expect(text).toBe(
      `{"allocation_requests":[{"allocations":{"${uuidOf(1)}":{"resources":{"VCPU":2}},"${uuidOf(2)}":{"resources":{"MEMORY_MB":512}}},` +
        `"mappings":{"":["${uuidOf(1)}"],"1":["${uuidOf(2)}"]}}],"provider_summaries":{}}`,
    );
    // A plain object would have put the digits first: JSON.stringify({ "": 1, "1": 2 }) is '{"1":2,"":1}'.
    expect(stringify(new Map([["", 1], ["1", 2]]))).toBe('{"":1,"1":2}');
  });

  it("refuses an answer longer than its bound, and gives one that fits whole", async () => {
    const one = await rendered(0, 1);
    await expect(rendered(one.length - 1, 1)).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(await rendered(one.length, 1)).toBe(one);
  });

  it("forgets what it collected when the answer is written again", async () => {
    const body = referenceBody(answerShape(Microversion.from("1.39")), query);
    body.candidate(candidate, names);
    expect(body.written).toBe(1);
    expect(body.discard()).toBe(true);
    body.end(result);
    expect(await bodyText(await body.respond(Promise.resolve(), () => {}))).toBe('{"allocation_requests":[],"provider_summaries":{}}');
  });
});
