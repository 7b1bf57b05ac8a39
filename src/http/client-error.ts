/**
 * Requests Node's HTTP parser rejects before they reach the app. Placement
 * answers a non-numeric Content-Length with its usual JSON 400 ("content-length
 * header must be an integer"); Node would close the socket after a bare 400
 * with no body, which clients cannot read as an error document. A request
 * not received in time gets a 408 in the same format.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { errorBody, PlacementError } from "./errors.js";

const NODE_STATUS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: "431 Request Header Fields Too Large",
};

export function answerParserErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Nothing can be said on a socket that is gone, or whose response has begun.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    if (err.code === "HPE_INVALID_CONTENT_LENGTH") {
      socket.end(rawErrorResponse("400 Bad Request", new PlacementError(400, "content-length header must be an integer")));
      return;
    }
    if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
      // A client too slow with its headers or body (see PLACEMENT_HEADERS_TIMEOUT_MS / PLACEMENT_REQUEST_TIMEOUT_MS).
      socket.end(rawErrorResponse("408 Request Timeout", new PlacementError(408, "The request was not received in time.")));
      return;
    }
    // Node's own answers for everything else (a listener replaces its default handling).
    const status = NODE_STATUS[err.code ?? ""] ?? "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  });
}

/** A whole HTTP response with Placement's JSON error body, written straight to the socket. */
function rawErrorResponse(status: string, err: PlacementError): string {
  const requestId = `req-${randomUUID()}`;
  const body = JSON.stringify(errorBody(err, requestId, false));
  return (
    `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nx-openstack-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  );
}
