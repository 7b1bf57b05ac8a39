/** What @hono/node-server binds to each request (c.env); absent when the app is driven without a socket (app.request in tests). */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AppContext } from "./context.js";

interface NodeBindings {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

export function nodeBindings(c: AppContext): NodeBindings {
  return (c.env as NodeBindings | undefined) ?? {};
}

/** The TCP peer. */
export function peerAddress(c: AppContext): string | undefined {
  return nodeBindings(c).incoming?.socket?.remoteAddress;
}

/**
 * Runs `sent` once the response has been handed whole to the kernel (the
 * ServerResponse's 'finish'): then nothing reads the body's buffers again.
 * Never runs for a response the client did not wait for, nor without a
 * socket (app.request in tests).
 */
export function whenSent(c: AppContext, sent: () => void): void {
  nodeBindings(c).outgoing?.once("finish", sent);
}
