/** The pieces every allocation candidates body has (what varies by microversion is services/candidates/answer-shape.ts). */
import { ascii } from "../../http/body-writer.js";

export const COMMA = ascii(",");
export const REQUESTS_OPEN = ascii('{"allocation_requests":[');
export const SUMMARIES_OPEN = ascii('],"provider_summaries":{');
export const BODY_CLOSE = ascii("}}");
export const CLOSE = ascii("}");
export const ARRAY_CLOSE = ascii("]");
