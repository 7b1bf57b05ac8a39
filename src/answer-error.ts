/**
 * The base of the errors that are answers, not faults: a service's refusal
 * (services/errors.ts) and the HTTP error it becomes (http/errors.ts). They
 * are made without a stack trace. Nothing reads one: the error table words
 * them from their fields, and only an unexpected error's stack is logged
 * (app.ts). Capturing it walks the whole synchronous and async call chain at
 * each construction, and a request such as a POST /claims that nothing fits
 * makes two of them; that capture was the largest part of what such a
 * refusal cost the server beyond an empty candidates answer.
 */
export class AnswerError extends Error {
  constructor(message?: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}
