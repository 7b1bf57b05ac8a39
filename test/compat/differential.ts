/**
 * One seed's run: every step of the workload goes to both servers, then the
 * re-reads of what it touched; every answer pair is compared.
 */
import { compare, type Difference } from "./compare.js";
import { knownBug } from "./exceptions.js";
import { limitedAnswerFaults, limitOf, withoutLimit } from "./limited.js";
import type { Exchange, Step } from "./model.js";
import { applyRefresh, refreshRequest, type RefreshKind } from "./refresh.js";
import { send, SideState, type Request, type Response } from "./request.js";
import { roomBefore, usageChange } from "./usage-change.js";
import { Workload } from "./workload.js";

export interface Finding {
  cause: string;
  seed: number;
  step: number;
  exchange: Exchange;
  differences: Difference[];
  /** The docs/placement-bugs.md anchor when this is a documented reference bug. */
  knownBug?: string;
  /** For a re-read: the write it followed (what a divergence in a generation needs to be traced). */
  after?: Exchange;
}

export interface SeedResult {
  seed: number;
  steps: number;
  requests: number;
  findings: Finding[];
}

function traced(step: number, req: Request): boolean {
  const trace = process.env.COMPAT_TRACE;
  if (!trace) return false;
  const pattern = /^\/(.+)\/$/.exec(trace)?.[1];
  return pattern ? new RegExp(pattern).test(`${req.path} ${req.body ?? ""}`) : trace === String(step);
}

/** By default every provider's generation is compared every 50 steps; --sweep-every 1 finds the step that diverged. */
export async function runSeed(seed: number, steps: number, urls: { reference: string; ours: string }, sweepEvery = 50): Promise<SeedResult> {
  const sides = [new SideState("reference"), new SideState("ours")] as const;
  const baseUrls = [urls.reference, urls.ours];
  const generatedUuid = (sym: string, ...answers: Response[]) => {
    answers.forEach((res, i) => {
      if (res.status >= 300) return;
      const fromLocation = /\/resource_providers\/([0-9a-f-]{36})/.exec(res.headers.get("location") ?? "")?.[1];
      const fromBody = res.text ? (/"uuid": ?"([0-9a-f-]{36})"/.exec(res.text)?.[1] ?? undefined) : undefined;
      const uuid = fromLocation ?? fromBody;
      if (uuid) sides[i].uuids.set(sym, uuid);
    });
  };
  /** The reference's uuid of a provider back to its symbol (a server-chosen uuid; otherwise the uuid is the symbol). */
  const providerSymOf = (uuid: string) => [...sides[0].uuids].find(([, u]) => u === uuid)?.[0] ?? uuid;
  const workload = new Workload(seed, generatedUuid);
  const model = workload.model;
  const findings: Finding[] = [];
  let requests = 0;
  let step = 0;

  /** Sends one request to both sides; returns the answers with their symbolised texts and whether they agreed. */
  const exchange = async (label: string, template: Request, global = false, beforeCompare?: Step["after"], after?: Exchange) => {
    const rendered = sides.map((side) => side.render(template));
    const answers = await Promise.all(rendered.map((req, i) => send(baseUrls[i], req)));
    requests += 2;
    // COMPAT_TRACE=<step>: print every request of that step with both answers (to trace a divergence);
    // COMPAT_TRACE=/regex/: every request whose path or body matches, at any step.
    if (traced(step, rendered[0])) console.log(`TRACE step ${step}`, "TRACE", label, rendered[0].method, rendered[0].path, JSON.stringify(rendered[0].headers), rendered[0].body, "->", answers[0].status, answers[0].text.slice(0, 300), "| ours", answers[1].status, answers[1].text.slice(0, 300));
    beforeCompare?.(answers[0], answers[1]);
    const texts = answers.map((res, i) => sides[i].symbolise(res.text));
    const symbolised = answers.map((res, i) => {
      const headers = new Headers(res.headers);
      const location = headers.get("location");
      if (location) headers.set("location", sides[i].symbolise(location, (sym) => `{${sym}}`));
      return { ...res, headers, text: texts[i] };
    });
    const record: Exchange = { label, request: { ...rendered[0], path: template.path }, reference: symbolised[0], ours: symbolised[1] };
    const limit = limitOf(template.path);
    const limited = limit !== undefined && answers.every((a) => a.status === 200) ? await limitedDifferences(label, template, texts, limit) : undefined;
    const differences = limited
      ? [...compare(symbolised[0], symbolised[1], { bodies: false }), ...limited.differences]
      : compare(symbolised[0], symbolised[1]);
    if (differences.length) {
      // Differences of the unlimited answers are judged on that exchange (a known bug shows there whole).
      const judged = limited?.unlimited && limited.differences.length === differences.length ? limited.unlimited : record;
      const asJudged = judged === record ? differences : differences.map((d) => ({ ...d, aspect: d.aspect.replace(/^without its limit: /, "") }));
      const bug = knownBug(judged, asJudged, {
        retiredClasses: model.retiredClasses,
        usageChange: (e, provider, rc) => usageChange(model, providerSymOf, e, provider, rc),
        roomBefore: (provider, rc) => roomBefore(model, providerSymOf, provider, rc),
      });
      const prefix = global && model.diverged && !bug ? "(after an earlier divergence) " : "";
      for (const d of differences) {
        findings.push({ cause: `${prefix}${label} | ${d.aspect}`, seed, step, exchange: record, differences, knownBug: bug?.anchor, after });
      }
    }
    return { answers, texts, agreed: differences.length === 0, record };
  };

  /** A limited candidates answer: both sides' unlimited answers compared, and each limited one checked against its own (limited.ts). */
  const limitedDifferences = async (
    label: string,
    template: Request,
    limitedTexts: string[],
    limit: number,
  ): Promise<{ differences: Difference[]; unlimited?: Exchange }> => {
    const request = { ...template, path: withoutLimit(template.path) };
    const rendered = sides.map((side) => side.render(request));
    const unlimited = await Promise.all(rendered.map((req, i) => send(baseUrls[i], req)));
    requests += 2;
    const symbolised = unlimited.map((res, i) => ({ ...res, text: sides[i].symbolise(res.text) }));
    const differences = compare(symbolised[0], symbolised[1]).map((d) => ({ ...d, aspect: `without its limit: ${d.aspect}` }));
    if (differences.length || unlimited.some((res) => res.status !== 200)) {
      return { differences, unlimited: { label, request: { ...rendered[0], path: request.path }, reference: symbolised[0], ours: symbolised[1] } };
    }
    return { differences: sides.flatMap((side, i) => limitedAnswerFaults(side.name, limitedTexts[i], symbolised[i].text, limit)) };
  };

  const refresh = async (kind: RefreshKind, sym: string, write: Exchange): Promise<boolean> => {
    const { label, request } = refreshRequest(kind, sym);
    const { answers, texts, agreed } = await exchange(`${label} after ${write.label}`, request, false, undefined, write);
    if (agreed) applyRefresh(kind, sym, model, sides.map((side, i) => [side, answers[i], texts[i]] as [SideState, Response, string]));
    return agreed;
  };

  const runStep = async (s: Step) => {
    const { agreed, record } = await exchange(s.label, s.request, s.global, s.after);
    for (const cleanup of s.referenceCleanup ?? []) await send(baseUrls[0], sides[0].render(cleanup));
    for (const cleanup of s.cleanup ?? []) await Promise.all(sides.map((side, i) => send(baseUrls[i], side.render(cleanup))));
    let consistent = agreed || !!s.cleanup;
    const touched: Array<[RefreshKind, string[] | undefined]> = [
      ["providers", s.touches?.providers],
      ["inventories", s.touches?.inventories],
      ["traits", s.touches?.traits],
      ["aggregates", s.touches?.aggregates],
      ["consumers", s.touches?.consumers],
    ];
    const results: Array<[RefreshKind, string, boolean]> = [];
    for (const [kind, syms] of touched) for (const sym of syms ?? []) results.push([kind, sym, await refresh(kind, sym, record)]);
    if (!consistent || results.some(([, , ok]) => !ok)) {
      consistent = false;
      for (const [kind, sym] of results) (kind === "consumers" ? model.taintConsumer(sym) : model.taintProvider(sym));
    }
    return consistent;
  };

  /** Every provider's generation, compared and resynchronised: catches a bump on a provider no step re-read. */
  const sweep = async () => {
    const { answers, texts, agreed } = await exchange("sweep GET /resource_providers", { method: "GET", path: "/resource_providers", headers: refreshRequest("providers", "").request.headers }, true);
    if (answers.some((a) => a.status !== 200)) return;
    sides.forEach((side, i) => {
      for (const p of JSON.parse(texts[i]).resource_providers) side.providerGenerations.set(p.uuid.replace(/^⟦u:(.*)⟧$/, "$1"), p.generation);
    });
    if (!agreed) model.diverged = true;
  };

  for (step = 1; step <= steps; step++) {
    for (const s of workload.next()) await runStep(s);
    if (step % sweepEvery === 0) await sweep();
  }
  await sweep();
  return { seed, steps, requests, findings };
}
