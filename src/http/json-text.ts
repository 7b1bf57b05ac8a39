/**
 * A JSON reader that keeps every number as the text it was written in, so
 * `1.0` can be told from `1` (JSON.parse turns both into the same double,
 * where Python reads a float from one and an int from the other). The
 * inventory routes echo allocation_ratio in the kind the client wrote it, as
 * Placement does; the differential test compares number kinds with it.
 */

/** A number exactly as it appeared in the JSON text. */
export class NumberToken {
  constructor(readonly text: string) {}
  toJSON(): string {
    return this.text;
  }
}

export type JsonText = null | boolean | string | NumberToken | JsonText[] | { [key: string]: JsonText };

/** Parses JSON text; throws SyntaxError on anything JSON.parse would refuse. */
export function parseJsonText(text: string): JsonText {
  let at = 0;
  const fail = (): never => {
    throw new SyntaxError(`bad JSON at ${at}`);
  };
  const space = () => {
    while (at < text.length && " \t\n\r".includes(text[at])) at++;
  };
  const value = (): JsonText => {
    space();
    const ch = text[at];
    if (ch === "{") {
      at++;
      const obj: { [key: string]: JsonText } = {};
      space();
      if (text[at] === "}") {
        at++;
        return obj;
      }
      for (;;) {
        space();
        if (text[at] !== '"') fail();
        const key = string();
        space();
        if (text[at++] !== ":") fail();
        obj[key] = value();
        space();
        if (text[at] === ",") at++;
        else if (text[at] === "}") {
          at++;
          return obj;
        } else fail();
      }
    }
    if (ch === "[") {
      at++;
      const list: JsonText[] = [];
      space();
      if (text[at] === "]") {
        at++;
        return list;
      }
      for (;;) {
        list.push(value());
        space();
        if (text[at] === ",") at++;
        else if (text[at] === "]") {
          at++;
          return list;
        } else fail();
      }
    }
    if (ch === '"') return string();
    for (const [word, result] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return result;
      }
    }
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at, at + 400));
    if (!match) fail();
    at += match![0].length;
    return new NumberToken(match![0]);
  };
  const string = (): string => {
    const start = at;
    at++;
    while (at < text.length && text[at] !== '"') at += text[at] === "\\" ? 2 : 1;
    if (at >= text.length) fail();
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const result = value();
  space();
  if (at !== text.length) fail();
  return result;
}
