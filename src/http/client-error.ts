/**
 * Requests Node's HTTP parser rejects before they reach the app. Placement
 * answers a non-numeric Content-Length with its usual JSON 400 ("content-length
 * header must be an integer"); Node would close the socket after a bare 400
 * with no body, which clients cannot read as an error document.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { errorBody, PlacementError } from "./errors.js";

const NODE_STATUS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: "431 Request Header Fields Too Large",
  ERR_HTTP_REQUEST_TIMEOUT: "408 Request Timeout",
};

export function answerParserErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    if (err.code === "HPE_INVALID_CONTENT_LENGTH") {
      const requestId = `req-${randomUUID()}`;
      const body = JSON.stringify(errorBody(new PlacementError(400, "content-length header must be an integer"), requestId, false));
      socket.end(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n" +
          `Content-Length: ${Buffer.byteLength(body)}\r\nx-openstack-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    // Node's own answers for everything else (a listener replaces its default handling).
    const status = NODE_STATUS[err.code ?? ""] ?? "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  });
}
