/** Reading request bodies: content type, JSON syntax (as Placement's Python reads it), then the zod schema. */
import type { z } from "zod";
import type { AppContext } from "./context.js";
import { badRequest, PlacementError } from "./errors.js";
import { parseJsonText } from "./json-text.js";
import { loadsPythonJsonBody, PythonJsonError } from "./python-json.js";
import { decodeUtf8 } from "./python-utf8.js";
import { validateBody } from "./validation.js";

/** Placement's wording when the body is not JSON: "The media type X is not supported, use application/json". */
export function requireJsonContent(c: AppContext): void {
  const raw = c.req.header("content-type");
  // Compared as written, like webob's req.content_type: "APPLICATION/JSON" is a 415 there too.
  const mediaType = raw?.split(";")[0].trim() || "None";
  if (mediaType !== "application/json") {
    throw new PlacementError(
      415,
      `The media type ${mediaType} is not supported, use application/json`,
      undefined,
      {},
      `The request media type ${raw || "None"} is not supported by this server.`,
    );
  }
}

/**
 * The body as Placement's json.loads reads it; a failure is its "Malformed
 * JSON" 400 with Python's message. From the raw bytes, not text: a BOM and
 * bytes that are not UTF-8 are errors there, where a text decoder would drop
 * or replace them.
 */
function readJson(bytes: Uint8Array): unknown {
  try {
    return loadsPythonJsonBody(bytes);
  } catch (err) {
    if (err instanceof PythonJsonError) throw badRequest(`Malformed JSON: ${err.message}`);
    throw err;
  }
}

/** Reads, parses and validates a JSON body against `schema`; a schema error shows the numbers as the client wrote them. */
export async function readJsonBody<S extends z.ZodType>(c: AppContext, schema: S): Promise<z.output<S>> {
  requireJsonContent(c);
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  return validateBody(schema, readJson(bytes), () => parseJsonText(decodeUtf8(bytes)!));
}
