/** Reading request bodies: content type, size limit, JSON syntax, then the zod schema. */
import type { z } from "zod";
import type { AppContext } from "./context.js";
import { PlacementError } from "./errors.js";
import { parseJson, validateBody } from "./validation.js";

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

/** Reads, parses and validates a JSON body against `schema`. */
export async function readJsonBody<S extends z.ZodType>(c: AppContext, schema: S): Promise<z.output<S>> {
  requireJsonContent(c);
  const text = await c.req.text();
  return validateBody(schema, parseJson(text));
}
