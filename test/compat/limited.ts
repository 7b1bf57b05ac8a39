/**
 * `GET /allocation_candidates?...&limit=N`: which N candidates Placement keeps
 * is not defined. It slices the list built from a Python set of allocation
 * requests (ordered by PYTHONHASHSEED, i.e. anew at every start of the
 * reference), or samples it at random with randomize_allocation_candidates.
 * So two correct servers answer different subsets, and comparing the limited
 * answers directly reports noise. What the API does define, and what is
 * checked here on each side against that side's own unlimited answer (which
 * is itself compared between the sides as usual):
 *
 * - min(N, all) allocation requests, each one of the unlimited answer's;
 * - provider summaries cut to the trees of the providers those requests use
 *   (Placement keeps a summary when its root is the root of a provider in a
 *   kept request), each as in the unlimited answer.
 */
import { canonical, type Difference } from "./compare.js";

interface Summary {
  root_provider_uuid?: string;
}

interface CandidatesBody {
  allocation_requests: Array<{ allocations: Record<string, unknown> | Array<{ resource_provider: { uuid: string } }> }>;
  provider_summaries: Record<string, Summary>;
}

/** The limit of a candidates request's path, or undefined when it has none (or not a valid one). */
export function limitOf(path: string): number | undefined {
  if (!path.startsWith("/allocation_candidates?")) return undefined;
  const value = new URLSearchParams(path.slice(path.indexOf("?") + 1)).getAll("limit");
  if (value.length !== 1 || !/^[1-9][0-9]*$/.test(value[0])) return undefined;
  return Number(value[0]);
}

/** The same request without its limit. */
export function withoutLimit(path: string): string {
  const [route, query] = [path.slice(0, path.indexOf("?")), path.slice(path.indexOf("?") + 1)];
  return `${route}?${query
    .split("&")
    .filter((p) => !p.startsWith("limit="))
    .join("&")}`;
}

const providersOf = (request: CandidatesBody["allocation_requests"][number]): string[] =>
  Array.isArray(request.allocations) ? request.allocations.map((a) => a.resource_provider.uuid) : Object.keys(request.allocations);

/** What is wrong with one server's limited answer against its own unlimited one (empty when it is a valid limited answer). */
export function limitedAnswerFaults(side: string, limitedText: string, unlimitedText: string, limit: number): Difference[] {
  const limited = JSON.parse(limitedText) as CandidatesBody;
  const all = JSON.parse(unlimitedText) as CandidatesBody;
  const faults: Difference[] = [];
  const fault = (aspect: string, expected: string, got: string) => faults.push({ aspect: `${side}'s limited answer: ${aspect}`, reference: expected, ours: got });

  const expectedCount = Math.min(limit, all.allocation_requests.length);
  if (limited.allocation_requests.length !== expectedCount) {
    fault("allocation_requests length", String(expectedCount), String(limited.allocation_requests.length));
  }
  // A multiset: before 1.34 two candidates that differ only in their (unshown) mappings read the same.
  const left = new Map<string, number>();
  for (const request of all.allocation_requests) left.set(canonical(request), (left.get(canonical(request)) ?? 0) + 1);
  for (const request of limited.allocation_requests) {
    const count = left.get(canonical(request)) ?? 0;
    if (count === 0) fault("an allocation request not in the unlimited answer (or more often than there)", "(one of the unlimited answer's)", canonical(request));
    left.set(canonical(request), count - 1);
  }

  // The root of a provider: from the unlimited summaries where they say it (1.29+); otherwise the provider
  // itself, which makes the check "a summary for every provider used" instead of "for every tree used".
  const rootOf = (uuid: string) => all.provider_summaries[uuid]?.root_provider_uuid ?? uuid;
  const roots = new Set(limited.allocation_requests.flatMap(providersOf).map(rootOf));
  const hasRoots = Object.values(all.provider_summaries).some((s) => s.root_provider_uuid !== undefined);
  const expected = Object.keys(all.provider_summaries).filter((uuid) => (hasRoots ? roots.has(rootOf(uuid)) : roots.has(uuid)));
  const got = Object.keys(limited.provider_summaries);
  const missing = expected.filter((uuid) => !(uuid in limited.provider_summaries));
  const extra = hasRoots ? got.filter((uuid) => !expected.includes(uuid)) : got.filter((uuid) => !(uuid in all.provider_summaries));
  if (missing.length) fault("provider summaries missing", missing.join(", "), "(absent)");
  if (extra.length) fault("provider summaries of trees no kept request uses", "(absent)", extra.join(", "));
  for (const uuid of got) {
    if (uuid in all.provider_summaries && canonical(limited.provider_summaries[uuid]) !== canonical(all.provider_summaries[uuid])) {
      fault("a provider summary unlike the unlimited answer's", canonical(all.provider_summaries[uuid]), canonical(limited.provider_summaries[uuid]));
    }
  }
  return faults;
}
