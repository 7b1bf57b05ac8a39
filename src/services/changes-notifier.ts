/**
 * Wakes long-polling readers of GET /changes when a transaction commits: one
 * LISTEN connection per process (taken from the pool while anyone waits, and
 * given back when nobody does), fed by the sequencing trigger's pg_notify,
 * whose payload is the new seq. A notification only says "look again": the
 * reader re-reads the table, so one that is lost (the connection dropped)
 * costs at most the reader's polling slice, never a change.
 *
 * Behind a transaction pooler (PLACEMENT_DB_POOLER=transaction) LISTEN cannot
 * work: the pooler gives the LISTEN and the notifications' server connection
 * to whoever comes next. There the notifier does not listen at all and every
 * wait is the reader's polling slice: a change reaches a waiting reader
 * within that slice instead of at once.
 */
import type pg from "pg";
import type { Logger } from "../log.js";

const CHANNEL = "placement_changes";

interface Waiter {
  after: number;
  wake: () => void;
}

/** One reader's interest, from before its first read to its answer: the connection listens throughout. */
export interface Subscription {
  /** Resolves once a commit after `after` is notified (perhaps already, since the subscription began), or after `ms`. */
  wait(after: number, ms: number): Promise<void>;
  close(): void;
}

export class ChangeNotifier {
  private client: Promise<pg.PoolClient> | undefined;
  private readonly waiters = new Set<Waiter>();
  private subscribers = 0;
  /** Each listening connection's release, which gives it back to the pool at most once. */
  private readonly release = new WeakMap<pg.PoolClient, (err?: Error) => void>();
  /** The highest seq notified since the connection started listening. */
  private latest = 0;
  /** The app closed it: no more listening, every wait is a plain timer. */
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: Logger,
    /** false behind a transaction pooler: poll, never LISTEN. */
    private readonly listen = true,
  ) {}

  /**
   * Starts listening (if nobody is yet) before it resolves, so a reader that
   * subscribes, reads, then waits cannot miss a commit in between.
   */
  async subscribe(): Promise<Subscription> {
    if (!this.listen || this.closed) return { wait: (_after, ms) => new Promise((resolve) => setTimeout(resolve, ms)), close: () => undefined };
    this.subscribers++;
    try {
      this.client ??= this.connect();
      await this.client;
    } catch (err) {
      this.client = undefined;
      this.unsubscribe();
      throw err;
    }
    let closed = false;
    return {
      wait: (after, ms) => this.wait(after, ms),
      close: () => {
        if (closed) return;
        closed = true;
        this.unsubscribe();
      },
    };
  }

  private wait(after: number, ms: number): Promise<void> {
    // Without a connection (it failed) the wait is a plain timer: the reader polls until the next subscriber reconnects.
    if (this.latest > after) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        after,
        wake: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, ms);
      this.waiters.add(waiter);
    });
  }

  private async connect(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    this.latest = 0;
    const onNotification = (msg: pg.Notification) => {
      const seq = Number(msg.payload);
      if (Number.isFinite(seq)) this.latest = Math.max(this.latest, seq);
      for (const w of [...this.waiters]) if (this.latest > w.after) w.wake();
    };
    const onError = (err: Error) => {
      this.log.warn("change feed listener lost its connection", { error: err.message });
      if (this.client === listening) this.drop();
      release(err);
    };
    let released = false;
    // The pool hands the connection to others afterwards: our handlers go with the release.
    const release = (err?: Error) => {
      if (released) return;
      released = true;
      client.removeListener("notification", onNotification);
      client.removeListener("error", onError);
      client.release(err);
    };
    this.release.set(client, release);
    client.on("notification", onNotification);
    client.on("error", onError);
    const listening = this.client;
    try {
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      release(err as Error);
      throw err;
    }
    return client;
  }

  /**
   * Stops listening for good (the app is closing): waiting readers look
   * again now and the connection goes back to the pool before the pool
   * ends; later subscribers poll.
   */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.client;
    this.client = undefined;
    for (const w of [...this.waiters]) w.wake();
    const client = await pending?.catch(() => undefined);
    if (!client) return;
    const release = this.release.get(client)!;
    await client.query(`UNLISTEN ${CHANNEL}`).then(
      () => release(),
      (err: Error) => release(err),
    );
  }

  /** Gives the connection back once nobody is subscribed. */
  private unsubscribe(): void {
    this.subscribers--;
    if (this.subscribers > 0 || !this.client) return;
    const pending = this.client;
    this.client = undefined;
    pending.then(
      (client) => {
        const release = this.release.get(client)!;
        client.query(`UNLISTEN ${CHANNEL}`).then(
          () => release(),
          (err: Error) => release(err),
        );
      },
      () => undefined,
    );
  }

  /** The connection failed: every waiter re-reads now; the next subscriber listens on a new connection. */
  private drop(): void {
    this.client = undefined;
    for (const w of [...this.waiters]) w.wake();
  }
}

