/**
 * The request log: a line per request. JSON by default; with LOG_FORMAT=text,
 * upstream Placement's requestlog line behind oslo.log's context brackets
 * (global request id, request id, user, project; "None" when absent):
 *   [None req-1b2c... admin admin] 127.0.0.1 "GET /resource_providers?name=a" status: 200 len: 52 microversion: 1.39 time: 0.004
 */
import type { Logger } from "../log.js";
import type { RequestListener, RequestRecord } from "./requests.js";

function textLine(r: RequestRecord): string {
  const context = [r.globalRequestId, r.requestId, r.userId, r.projectId].map((v) => v ?? "None").join(" ");
  const len = r.bytes ?? "-";
  const version = r.microversion ?? "-";
  return `[${context}] ${r.remoteAddress ?? "-"} "${r.method} ${r.path}" status: ${r.status} len: ${len} microversion: ${version} time: ${(r.durationMs / 1000).toFixed(6)}`;
}

function fields(r: RequestRecord): Record<string, unknown> {
  return {
    remote_addr: r.remoteAddress,
    method: r.method,
    path: r.path,
    route: r.route,
    status: r.status,
    bytes: r.bytes,
    microversion: r.microversion,
    request_id: r.requestId,
    global_request_id: r.globalRequestId,
    user_id: r.userId,
    project_id: r.projectId,
    duration_ms: Math.round(r.durationMs * 1000) / 1000,
    ...(r.aborted ? { aborted: true } : {}),
  };
}

export function requestLogger(log: Logger): RequestListener {
  return log.format === "text" ? (r) => log.info(textLine(r)) : (r) => log.info("request", fields(r));
}
