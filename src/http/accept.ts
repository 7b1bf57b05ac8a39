/**
 * Reading the Accept header the way webob does for Placement: quality first,
 * then the most specific matching range; on equal quality the first offer wins.
 */

/** True when an Accept header admits application/json (a missing header admits anything). */
export function acceptsJson(accept: string | undefined): boolean {
  return bestMatch(accept, ["application/json"]) !== undefined;
}

/** The offer an Accept header prefers, by quality then specificity; undefined when none is acceptable. */
export function bestMatch(accept: string | undefined, offers: string[]): string | undefined {
  if (!accept || accept.trim() === "") return offers[0];
  const ranges = accept.split(",").map((part) => {
    const [range, ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return { range: range.trim(), q: q ? Number(q.slice(2)) : 1 };
  });
  let best: { offer: string; q: number } | undefined;
  for (const offer of offers) {
    const [type] = offer.split("/");
    const matching = ranges
      .filter((r) => r.range === offer || r.range === `${type}/*` || r.range === "*/*")
      .sort((a, b) => specificity(b.range) - specificity(a.range));
    const q = matching[0]?.q ?? 0;
    if (q > 0 && (!best || q > best.q)) best = { offer, q };
  }
  return best?.offer;
}

function specificity(range: string): number {
  if (range === "*/*") return 0;
  return range.endsWith("/*") ? 1 : 2;
}
