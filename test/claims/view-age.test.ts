/**
 * A claim's first answer may come from a state of the cloud view up to
 * VIEW_AGE_MS old (services/claims.ts): what the view no longer knows costs a
 * retry, never a wrong claim, and a 409 is only answered from a fresh view.
 * Here the age is a minute, so the older state is certain to be used.
 */
import { beforeEach, expect, it } from "vitest";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { CandidatesService } from "../../src/services/candidates/service.js";
import { claim, type ClaimRequest } from "../../src/services/claims.js";
import { ClaimRefused } from "../../src/services/errors.js";
import { allocationsOf, brokenInvariants, consumer, emptyCloud, harnessWithOwnConnection } from "./support.js";

const db = harnessWithOwnConnection();
const OLD = 60_000;

let host: Provider;
let service: CandidatesService;
let retries: string[];
beforeEach(async () => {
  await emptyCloud(db.t);
  host = await createProvider(db.t, { VCPU: { total: 4 } });
  service = new CandidatesService(db.t.database.db, db.t.config);
  retries = [];
});

const store = () => ({ db: db.t.database.db, allocationRetries: 10, onRetry: (why: string) => retries.push(why) });

function request(who = consumer()): ClaimRequest {
  return {
    query: parseCandidatesQuery([...new URLSearchParams("resources=VCPU:4").entries()], Microversion.from("1.39")),
    shape: answerShape(Microversion.from("1.39")),
    consumers: [{ consumerUuid: who.consumer_uuid, projectId: who.project_id, userId: who.user_id, consumerType: who.consumer_type }],
    pick: "first",
    alternates: 0,
    allOrNothing: true,
  };
}

/** Takes all of `on`'s VCPU through the ordinary write path (not a claim): the view learns of it only from a fresh read. */
async function fill(on: Provider): Promise<string> {
  const who = consumer();
  const res = await db.t.request("PUT", `/allocations/${who.consumer_uuid}`, {
    body: { allocations: { [on.uuid]: { resources: { VCPU: 4 } } }, project_id: who.project_id, user_id: who.user_id, consumer_generation: null, consumer_type: "INSTANCE" },
  });
  expect(res.status, res.text).toBe(204);
  return who.consumer_uuid;
}

it("claims from an older view: a candidate filled since is refused under its lock and the next answer is fresh", async () => {
  // The first claim's answer reads the host empty; its own write then fills it, and a second host appears.
  await claim(store(), service, request(), { oneStatement: true, viewAgeMs: OLD });
  const other = await createProvider(db.t, { VCPU: { total: 4 } });

  retries = [];
  const who = consumer();
  const outcome = await claim(store(), service, request(who), { oneStatement: true, viewAgeMs: OLD });
  // The older state offered only the host, which the statement found full: one stale round, then the fresh answer's other host.
  expect(retries).toEqual(["claim_statement_stale", "claim_stale"]);
  expect(Object.keys(outcome.claims[0].allocations)).toEqual([other.uuid]);
  expect(await allocationsOf(db.t, who.consumer_uuid)).toEqual({ [other.uuid]: { VCPU: 4 } });

  // With a fresh view the same claim goes straight to the host with room.
  expect((await db.t.request("DELETE", `/allocations/${who.consumer_uuid}`)).status).toBe(204);
  retries = [];
  const again = await claim(store(), service, request(), { oneStatement: true, viewAgeMs: 0 });
  expect(retries).toEqual([]);
  expect(Object.keys(again.claims[0].allocations)).toEqual([other.uuid]);
  expect(await brokenInvariants(db.t)).toEqual([]);
});

it("answers an empty older view again, fresh, before refusing", async () => {
  const filler = await fill(host);
  // Nothing fits: refused, and the view's state (the host full) is now a recent one.
  await expect(claim(store(), service, request(), { oneStatement: true, viewAgeMs: OLD })).rejects.toBeInstanceOf(ClaimRefused);
  // Room again, which the recent state does not show.
  expect((await db.t.request("DELETE", `/allocations/${filler}`)).status).toBe(204);
  const who = consumer();
  const outcome = await claim(store(), service, request(who), { oneStatement: true, viewAgeMs: OLD });
  expect(Object.keys(outcome.claims[0].allocations)).toEqual([host.uuid]);
  expect(await allocationsOf(db.t, who.consumer_uuid)).toEqual({ [host.uuid]: { VCPU: 4 } });
  expect(await brokenInvariants(db.t)).toEqual([]);
});
