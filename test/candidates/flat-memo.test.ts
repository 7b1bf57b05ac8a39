/**
 * The flat answer's pass is kept per copy state (ViewRead.memo): requests
 * that resolve to the same ids over an unchanged copy share one pass, each
 * gets a list of its own, and any change to the copy makes the pass again.
 * The view reads a real database; the test only counts the passes made.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { CloudView, type ViewRead } from "../../src/services/candidates/cloud-view.js";
import { flatAnswer } from "../../src/services/candidates/flat-answer.js";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { consumer } from "../claims/support.js";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

const parse = (q: string) => parseCandidatesQuery([...new URLSearchParams(q).entries()], Microversion.from("1.39"));
const names = { traits: [], aggregates: [] };
const ids = (answer: ReturnType<typeof flatAnswer>) => answer.anchors.map((a) => a.id);

it("one pass per query and copy state, a list of its own for each caller, a new pass after a change", async () => {
  const a: Provider = await createProvider(t, { VCPU: { total: 4 } });
  const b: Provider = await createProvider(t, { VCPU: { total: 4 } });
  const view = new CloudView(t.database.db);
  let passes = 0;
  const counted = (read: ViewRead): ViewRead => ({
    ...read,
    memo: (key, make) =>
      read.memo(key, () => {
        passes++;
        return make();
      }),
  });
  const answer = (read: ViewRead, q: string) => flatAnswer(counted(read), parse(q), { limit: undefined, randomize: false });

  const [cut, whole, other] = (await view.read(names, (read) => {
    const first = answer(read, "resources=VCPU:2");
    first.anchors.length = 0;
    return [first, answer(read, "resources=VCPU:2"), answer(read, "resources=VCPU:3")];
  }))!;
  // Two queries, two passes; the second caller of the first got the whole list although the first cut its own.
  expect(passes).toBe(2);
  expect(ids(cut)).toEqual([]);
  expect(ids(whole)).toEqual([a.id, b.id]);
  expect(ids(other)).toEqual([a.id, b.id]);

  const who = consumer();
  const put = await t.request("PUT", `/allocations/${who.consumer_uuid}`, {
    body: { allocations: { [a.uuid]: { resources: { VCPU: 4 } } }, project_id: who.project_id, user_id: who.user_id, consumer_generation: null, consumer_type: "INSTANCE" },
  });
  expect(put.status, put.text).toBe(204);
  const after = (await view.read(names, (read) => answer(read, "resources=VCPU:2")))!;
  expect(passes).toBe(3);
  expect(ids(after)).toEqual([b.id]);
});
