/**
 * Requests of the workload, written once and rendered for each side.
 *
 * A request names providers and consumers by symbol; each side fills in its
 * own uuid (they differ only for a provider whose uuid the server chose) and
 * its own current generation, so a divergence in one generation is reported
 * at the write that caused it and does not turn every later conditional
 * write into a 409 on one side only.
 */
import http from "node:http";

/** Markers left in a request's text; rendering replaces them per side. */
export const uuidOf = (sym: string): string => `⟦u:${sym}⟧`;
/** A provider's current generation (a JSON number after rendering). */
export const generationOf = (sym: string): string => `⟦g:${sym}⟧`;
/** A number written exactly so (e.g. "1.0"), not as JSON.stringify would write it. */
export const numberText = (text: string): string => `⟦n:${text}⟧`;
/** A consumer's current generation (a JSON number, or null for a new consumer). */
export const consumerGenerationOf = (sym: string): string => `⟦c:${sym}⟧`;

export interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** What one side knows of its own state: server-chosen uuids and generations. */
export class SideState {
  readonly uuids = new Map<string, string>();
  readonly providerGenerations = new Map<string, number>();
  readonly consumerGenerations = new Map<string, number | null>();

  constructor(readonly name: string) {}

  render(template: Request): Request {
    const fill = (text: string): string =>
      text
        .replace(/"⟦g:([^⟧]+)⟧"/g, (_, sym: string) => String(this.providerGenerations.get(sym) ?? 0))
        .replace(/"⟦c:([^⟧]+)⟧"/g, (_, sym: string) => JSON.stringify(this.consumerGenerations.get(sym) ?? null))
        .replace(/"⟦n:([^⟧]+)⟧"/g, (_, text: string) => text)
        .replace(/⟦u:([^⟧]+)⟧/g, (_, sym: string) => this.uuids.get(sym) ?? sym);
    return {
      method: template.method,
      path: fill(template.path),
      headers: Object.fromEntries(Object.entries(template.headers).map(([k, v]) => [k, fill(v)])),
      body: template.body === undefined ? undefined : fill(template.body),
    };
  }

  /** The reverse of render for a response: server-chosen uuids back to their symbols. */
  symbolise(text: string, marker: (sym: string) => string = uuidOf): string {
    let out = text;
    for (const [sym, uuid] of this.uuids) if (uuid !== sym) out = out.split(uuid).join(marker(sym));
    return out;
  }
}

export interface Response {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * One request on a fresh connection: uwsgi's http-socket closes every
 * connection after its answer, which a keep-alive client would trip over.
 */
export function send(baseUrl: string, req: Request): Promise<Response> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(baseUrl + req.path, { method: req.method, headers: req.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const v of Array.isArray(value) ? value : [value ?? ""]) headers.append(name, v);
        }
        resolve({ status: res.statusCode ?? 0, headers, text: Buffer.concat(chunks).toString("utf8") });
      });
    });
    outgoing.on("error", (err) => reject(new Error(`${req.method} ${baseUrl}${req.path}: ${err.message}`)));
    outgoing.end(req.body);
  });
}
