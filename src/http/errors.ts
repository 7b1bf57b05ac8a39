/**
 * Placement's error model: every error response is
 *   {"errors": [{"status", "title", "detail", "code", "request_id"}]}
 * with `code` only from microversion 1.23. The HTTP layer throws PlacementError;
 * services throw domain errors, which error-table.ts maps to PlacementErrors.
 * Unknown exceptions become a 500 whose detail says nothing internal.
 */

import { AnswerError } from "../answer-error.js";
import { bestMatch } from "./accept.js";

/** Stable error codes. Clients match on these strings: do not change them. */
export const ErrorCode = {
  DEFAULT: "placement.undefined_code",
  INVENTORY_INUSE: "placement.inventory.inuse",
  CONCURRENT_UPDATE: "placement.concurrent_update",
  DUPLICATE_NAME: "placement.duplicate_name",
  PROVIDER_IN_USE: "placement.resource_provider.inuse",
  PROVIDER_CANNOT_DELETE_PARENT: "placement.resource_provider.cannot_delete_parent",
  RESOURCE_PROVIDER_NOT_FOUND: "placement.resource_provider.not_found",
  ILLEGAL_DUPLICATE_QUERYPARAM: "placement.query.duplicate_key",
  QUERYPARAM_BAD_VALUE: "placement.query.bad_value",
  QUERYPARAM_MISSING_VALUE: "placement.query.missing_value",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * Title and leading explanation per status, worded as Placement (through
 * webob) words them; some clients and the conformance tests read them.
 */
const STATUS_TEXT: Record<number, { title: string; explanation: string }> = {
  400: {
    title: "Bad Request",
    explanation: "The server could not comply with the request since it is either malformed or otherwise incorrect.",
  },
  401: {
    title: "Unauthorized",
    explanation:
      "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.",
  },
  403: { title: "Forbidden", explanation: "Access was denied to this resource." },
  404: { title: "Not Found", explanation: "The resource could not be found." },
  405: { title: "Method Not Allowed", explanation: "" },
  406: { title: "Not Acceptable", explanation: "" },
  408: { title: "Request Timeout", explanation: "The server has waited too long for the request to be sent by the client." },
  409: { title: "Conflict", explanation: "There was a conflict when trying to complete your request." },
  // Only the change feed extension answers 410 (a cursor past retention); the wording is webob's.
  410: { title: "Gone", explanation: "This resource is no longer available.  No forwarding address is given." },
  413: { title: "Request Entity Too Large", explanation: "The body of your request was too large for this server." },
  415: { title: "Unsupported Media Type", explanation: "" },
  500: {
    title: "Internal Server Error",
    explanation: "The server has either erred or is incapable of performing the requested operation.",
  },
  503: { title: "Service Unavailable", explanation: "The server is currently unavailable. Please try again at a later time." },
};

export function statusTitle(status: number): string {
  return STATUS_TEXT[status]?.title ?? "Error";
}

/** Made without a stack trace, as every answer is (answer-error.ts). */
export class PlacementError extends AnswerError {
  /** Placement raises this one outside its handlers, so its response gets no Vary (http/vary.ts). */
  raisedPastHandler = false;

  constructor(
    readonly status: number,
    /** The specific message; the status's standard explanation is put in front of it. */
    readonly detail: string,
    readonly code: ErrorCode = ErrorCode.DEFAULT,
    /** Extra response headers (Allow on 405, WWW-Authenticate on 401). */
    readonly headers: Record<string, string> = {},
    /** Replaces the standard explanation (405, 406 and 415 phrase it per request). */
    readonly explanation?: string,
    /** Extra fields of the error object (the version range on a microversion 406). */
    readonly extra: Record<string, string> = {},
  ) {
    super(detail);
  }

  /**
   * The `detail` field as Placement renders it: explanation, blank line,
   * message. Placement's formatter strips webob's HTML (strip_tags), which
   * turns every line break inside the message into a space, so the message is
   * one line (the openstack CLI prints only a detail's last line). The
   * statuses whose explanation names the request (405, 406, 415) use webob's
   * shorter template: a space before the blank line, none after the message.
   */
  renderDetail(): string {
    const message = this.detail.replace(/\r/g, "").replace(/\n/g, " ");
    if (this.explanation !== undefined) return `${this.explanation.replace(/\n/g, " ")} \n\n ${message}`;
    const explanation = STATUS_TEXT[this.status]?.explanation ?? "";
    return `${explanation}\n\n ${message}  `.replace(/^\n\n /, "");
  }
}

/**
 * An error a middleware returns before Placement's error formatting (noauth2's
 * 401): webob renders it with its own defaults, a JSON body of
 * {"message", "code", "title"} rather than Placement's `errors` list.
 */
export class WebobDefaultError extends PlacementError {}

export const badRequest = (detail: string, code: ErrorCode = ErrorCode.DEFAULT) => new PlacementError(400, detail, code);
export const forbidden = (detail: string) => new PlacementError(403, detail);

/**
 * A 406 worded as webob words it, naming what the client would accept (an
 * absent or `*\/*` Accept counts as JSON, as Placement's request log sets it).
 */
export function notAcceptable(detail: string, accept: string | undefined, extra: Record<string, string> = {}): PlacementError {
  const wanted = !accept || accept === "*/*" ? "application/json" : accept;
  // The line break is webob's; the JSON detail turns it into a space like any other.
  const explanation = `The resource could not be generated that was acceptable to your browser\n(content of type ${wanted}.`;
  return new PlacementError(406, detail, ErrorCode.DEFAULT, {}, explanation, extra);
}

export interface ErrorBody {
  errors: Array<{ status: number; title: string; detail: string; code?: string; request_id?: string; [extra: string]: unknown }>;
}

export function errorBody(err: PlacementError, requestId: string | undefined, includeCode: boolean): ErrorBody {
  return {
    errors: [
      {
        status: err.status,
        title: statusTitle(err.status),
        detail: err.renderDetail(),
        ...(includeCode ? { code: err.code } : {}),
        ...(requestId ? { request_id: requestId } : {}),
        ...err.extra,
      },
    ],
  };
}

/**
 * An error response's body in the format the Accept header asks for, as
 * webob chooses it for Placement: JSON when Accept is absent or `*\/*`
 * (Placement's request log sets it so), otherwise HTML or JSON by preference
 * (HTML on a tie), and plain text when neither is acceptable.
 */
export function renderError(
  err: PlacementError,
  accept: string | undefined,
  requestId: string | undefined,
  includeCode: boolean,
): { contentType: string; text: string } {
  const wanted = !accept || accept.trim() === "*/*" ? "application/json" : bestMatch(accept, ["text/html", "application/json"]);
  const status = `${err.status} ${statusTitle(err.status)}`;
  if (err instanceof WebobDefaultError) return renderWebobDefault(err, wanted, status);
  if (wanted === "application/json") {
    return { contentType: "application/json", text: JSON.stringify(errorBody(err, requestId, includeCode)) };
  }
  if (wanted === "text/html") {
    const detail =
      err.explanation !== undefined
        ? // webob's templates: the 415's breaks stand on a line of their own, the 405's and 406's follow a space.
          `${escapeHtml(err.explanation)}${err.status === 415 ? "\n" : " "}<br /><br />\n${escapeHtml(err.detail)}`
        : `${escapeHtml(STATUS_TEXT[err.status]?.explanation ?? "")}<br /><br />\n${escapeHtml(err.detail)}\n\n`;
    return {
      contentType: "text/html; charset=UTF-8",
      text: `<html>\n <head>\n  <title>${status}</title>\n </head>\n <body>\n  <h1>${status}</h1>\n  ${detail}\n </body>\n</html>`,
    };
  }
  return { contentType: "text/plain; charset=UTF-8", text: `${status}\n\n${err.renderDetail()}` };
}

/** webob's own renderings of an error without a detail, byte for byte. */
function renderWebobDefault(err: PlacementError, wanted: string | undefined, status: string): { contentType: string; text: string } {
  const explanation = STATUS_TEXT[err.status]?.explanation ?? "";
  if (wanted === "application/json") {
    // Python's json.dumps separators (", " and ": "), as webob writes it.
    const [message, code, title] = [`${explanation}<br /><br />\n\n\n`, status, statusTitle(err.status)].map((v) => JSON.stringify(v));
    return { contentType: "application/json", text: `{"message": ${message}, "code": ${code}, "title": ${title}}` };
  }
  if (wanted === "text/html") {
    const page = `<html>\n <head>\n  <title>${status}</title>\n </head>\n <body>\n  <h1>${status}</h1>\n  ${explanation}<br /><br />\n\n\n\n </body>\n</html>`;
    return { contentType: "text/html; charset=UTF-8", text: page };
  }
  return { contentType: "text/plain; charset=UTF-8", text: `${status}\n\n${explanation}\n\n   ` };
}

/** Python's html.escape(s, quote=True), as webob escapes a detail for its HTML page. */
function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
}

/** Seconds a client is told to wait before retrying a 503: a restarting database is usually back within a few. */
export const RETRY_AFTER_SECONDS = "2";

/** A 503 the client should retry (Retry-After set), worded without internals. */
export function unavailable(detail: string): PlacementError {
  return new PlacementError(503, detail, ErrorCode.DEFAULT, { "retry-after": RETRY_AFTER_SECONDS });
}
