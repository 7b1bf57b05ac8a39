/** What an allocation candidates response looks like at each microversion, and the pieces every one has. */
import { ascii } from "../http/body-writer.js";
import type { Microversion } from "../http/microversion.js";

export const COMMA = ascii(",");
export const REQUESTS_OPEN = ascii('{"allocation_requests":[');
export const SUMMARIES_OPEN = ascii('],"provider_summaries":{');
export const BODY_CLOSE = ascii("}}");
export const CLOSE = ascii("}");
export const ARRAY_CLOSE = ascii("]");

export interface ResponseShape {
  /** 1.12: allocations keyed by provider uuid (a list before). */
  dictForm: boolean;
  /** 1.34: mappings of suffixes to providers. */
  mappings: boolean;
  /** 1.17: traits in provider summaries. */
  traits: boolean;
  /** 1.27: every inventory class in summaries (only the requested ones before). */
  allClasses: boolean;
  /** 1.29: parent and root uuids in summaries. */
  tree: boolean;
}

export function responseShape(mv: Microversion): ResponseShape {
  return {
    dictForm: mv.atLeast("1.12"),
    mappings: mv.atLeast("1.34"),
    traits: mv.atLeast("1.17"),
    allClasses: mv.atLeast("1.27"),
    tree: mv.atLeast("1.29"),
  };
}
