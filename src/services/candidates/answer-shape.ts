/**
 * What an allocation candidates answer looks like at the request's
 * microversion: what the paths must find (from 1.29, candidates spread over
 * a tree's providers) and what the renderers write, in one value, so the
 * search and the body never disagree about the version.
 */
import type { Microversion } from "../../http/microversion.js";

export interface AnswerShape {
  /** 1.12: allocations keyed by provider uuid (a list before). */
  dictForm: boolean;
  /** 1.34: mappings of suffixes to providers. */
  mappings: boolean;
  /** 1.17: traits in provider summaries. */
  traits: boolean;
  /** 1.27: every inventory class in summaries (only the requested ones before). */
  allClasses: boolean;
  /** 1.29: candidates may take resources from several providers of one tree; parent and root uuids in summaries. */
  tree: boolean;
}

export function answerShape(mv: Microversion): AnswerShape {
  return {
    dictForm: mv.atLeast("1.12"),
    mappings: mv.atLeast("1.34"),
    traits: mv.atLeast("1.17"),
    allClasses: mv.atLeast("1.27"),
    tree: mv.atLeast("1.29"),
  };
}
