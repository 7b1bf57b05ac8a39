/**
 * A JSON reader that keeps every number as the text it was written in, so
 * `1.0` can be told from `1` (JSON.parse turns both into the same double,
 * where Python reads a float from one and an int from the other). The
 * inventory routes echo allocation_ratio in the kind the client wrote it, as
 * Placement does; the differential test compares number kinds with it.
 * It reads what Python's json reads (NaN, numbers of any length included).
 */
import { type PyJson, scanPythonJson } from "./python-json.js";

/** A number exactly as it appeared in the JSON text. */
export class NumberToken {
  constructor(readonly text: string) {}
  toJSON(): string {
    return this.text;
  }
}

export type JsonText = PyJson<NumberToken>;

/** Parses JSON text; throws PythonJsonError (a SyntaxError's place) on anything Python's json refuses. */
export function parseJsonText(text: string): JsonText {
  return scanPythonJson(text, (literal) => new NumberToken(literal));
}
