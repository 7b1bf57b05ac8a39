/** What every handler can read from the Hono context, and what the app is built from. */
import type { Context } from "hono";
import type { Config } from "../config.js";
import type { Db } from "../db/database.js";
import type { Logger } from "../log.js";
import type { Store } from "../services/store.js";
import type { Identity } from "../auth/identity.js";
import type { PolicyEnforcer } from "../auth/policy.js";
import type { CandidatesService, CandidatesServiceOptions } from "../services/candidates/service.js";
import type { Microversion } from "./microversion.js";

export interface AppDeps {
  db: Db;
  config: Config;
  log: Logger;
  /** Tests only: how the candidates service picks its path (see CandidatesServiceOptions). */
  candidates?: CandidatesServiceOptions;
}

/** Services that keep state for the app's lifetime, made once by createApp. */
export interface AppServices {
  candidates: CandidatesService;
}

/** What route factories are given: the app's inputs plus what createApp builds from them once. */
export interface RouteDeps extends AppDeps {
  store: Store;
  services: AppServices;
}

export type AppEnv = {
  Variables: {
    requestId: string;
    microversion: Microversion;
    identity: Identity;
    policy: PolicyEnforcer;
  };
};

export type AppContext = Context<AppEnv>;
