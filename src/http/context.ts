/** What every handler can read from the Hono context, and what the app is built from. */
import type { Context } from "hono";
import type { Config } from "../config.js";
import type { Db } from "../db/database.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../observe/metrics.js";
import type { Store } from "../services/store.js";
import type { Identity } from "../auth/identity.js";
import type { PolicyEnforcer } from "../auth/policy.js";
import type { CandidatesServiceOptions } from "../services/candidates/service.js";
import type { CandidatesAnswerer } from "../services/replica-candidates.js";
import type { ReadReplicas } from "../db/read-replicas.js";
import type { AnswerBudget } from "../render/candidates/budget.js";
import type { RenderCache } from "../render/candidates/cache.js";
import type { ChangeNotifier } from "../services/changes-notifier.js";
import type { Microversion } from "./microversion.js";

export interface AppDeps {
  db: Db;
  config: Config;
  log: Logger;
  /** The process's metrics; createApp makes a registry of its own when none is given. */
  metrics?: Metrics;
  /** Tests only: how the candidates service picks its path (see CandidatesServiceOptions). */
  candidates?: CandidatesServiceOptions;
}

/** Services that keep state for the app's lifetime, made once by createApp and closed by its close(). */
export interface AppServices {
  /** GET /allocation_candidates' service, with its cloud view (one per database it reads). */
  candidates: CandidatesAnswerer;
  /**
   * What every candidates answer's body shares: the render cache (encoded
   * provider pieces, the uuid arena, the buffers bodies are written in) and
   * the answer-size budget (PLACEMENT_MAX_ANSWER_BYTES).
   */
  render: { cache: RenderCache; budget: AnswerBudget };
  /** Wakes GET /changes' long polls; holds a LISTEN connection while anyone waits. */
  changes: ChangeNotifier;
  /** PLACEMENT_READ_DATABASE_URL's standbys, for the reads that may be stale; absent: every read on `db`. */
  replicas?: ReadReplicas;
}

/** What route factories are given: the app's inputs plus what createApp builds from them once. */
export interface RouteDeps extends AppDeps {
  store: Store;
  metrics: Metrics;
  services: AppServices;
}

export type AppEnv = {
  Variables: {
    requestId: string;
    /** A well-formed X-OpenStack-Request-ID the caller sent (oslo's global request id), for the request log. */
    globalRequestId: string | undefined;
    microversion: Microversion;
    identity: Identity;
    policy: PolicyEnforcer;
  };
};

export type AppContext = Context<AppEnv>;
