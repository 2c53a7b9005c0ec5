/**
 * Turns as jobs in a PostgreSQL-backed queue, taken by any of several `harness serve` workers
 * (DESIGN "Serving": many workers share one database). Built on pg-boss (10.x, the newest major
 * that runs on Node 20): jobs are rows taken with `SELECT … FOR UPDATE SKIP LOCKED`, retried with a
 * delay, and expired when a worker stops answering — graphile-worker 0.16 would serialise a
 * session's jobs by queue name, but it only reclaims a dead worker's jobs after four hours.
 *
 * A job carries a session id and a turn's input. The worker that takes it opens the session (its
 * writer lease: the journal store's lock), journals the job's id, runs the turn to its end and
 * completes the job. A session whose lease another worker holds is a retry later. A worker killed
 * mid-turn loses nothing acknowledged: its job expires and is taken again; the next opener of the
 * session closes the turn it left (`interrupted`, by repair), and because the job's id is in the
 * journal before its turn, the job does not run its turn a second time.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import PgBoss from 'pg-boss';
import { HarnessError } from '../../runtime/index.ts';
import type { TurnInput, TurnService } from './turns.ts';

export const TURN_QUEUE = 'harness-turn';

export interface TurnQueueOptions {
  /** `postgres://…` of the queue's database. */
  readonly url: string;
  /** Schema of pg-boss's tables. Default `harness_queue`. */
  readonly schema?: string;
  /** A job not completed this long after it was taken is taken again (its worker is presumed dead), s. Default 600. */
  readonly expireInSeconds?: number;
  /** Wait before a job whose session is busy elsewhere is tried again, s. Default 1. */
  readonly retryDelaySeconds?: number;
  /** How often an idle worker looks for jobs, s (≥ 0.5). Default 0.5. */
  readonly pollingIntervalSeconds?: number;
  /** How often expired jobs are looked for, s (≥ 1). Default 5. */
  readonly maintenanceIntervalSeconds?: number;
  /** Jobs one worker runs at once. Default 4. */
  readonly concurrency?: number;
}

interface TurnJob {
  readonly sessionId: string;
  readonly input: TurnInput;
  /** The session's last seq when the job was queued. */
  readonly afterSeq?: number;
}

/** A queued turn, as `submit` answers. */
export interface QueuedTurn {
  readonly sessionId: string;
  readonly jobId: string;
  /** The session's last seq when the job was queued: its turn's events come after it. */
  readonly afterSeq: number;
  /** True when an earlier submit with the same idempotency key queued this job (nothing new was queued). */
  readonly replayed?: boolean;
}

export class TurnQueue {
  private readonly boss: PgBoss;
  private readonly turns: TurnService;
  private readonly options: TurnQueueOptions;
  private working = false;
  private stopped = false;

  private constructor(boss: PgBoss, turns: TurnService, options: TurnQueueOptions) {
    this.boss = boss;
    this.turns = turns;
    this.options = options;
  }

  /**
   * Connects, creates (or migrates) the queue's schema, and the queue.
   * @throws HarnessError `QUEUE_UNAVAILABLE` when the database cannot be reached (the URL's password is not shown).
   */
  static async open(turns: TurnService, options: TurnQueueOptions): Promise<TurnQueue> {
    const boss = new PgBoss({
      connectionString: options.url,
      schema: options.schema ?? 'harness_queue',
      maintenanceIntervalSeconds: options.maintenanceIntervalSeconds ?? 5,
      application_name: 'harness-serve',
    });
    boss.on('error', (error: Error) => turns.harness.kernel.bus.report({ level: 'warning', code: 'QUEUE_ERROR', message: `The turn queue: ${error.message}`, source: 'serve' }));
    try {
      await boss.start();
      await boss.createQueue(TURN_QUEUE, {
        name: TURN_QUEUE,
        policy: 'standard',
        // A busy session is retried until its lease is free; a dead worker's job is taken again.
        retryLimit: 10_000,
        retryDelay: options.retryDelaySeconds ?? 1,
        expireInSeconds: options.expireInSeconds ?? 600,
      });
    } catch (error) {
      await boss.stop({ graceful: false, wait: false }).catch(() => undefined);
      throw new HarnessError(
        'QUEUE_UNAVAILABLE',
        `The turn queue's database could not be opened (${redact(options.url)}): ${error instanceof Error ? redactIn(error.message, options.url) : String(error)}`,
      );
    }
    return new TurnQueue(boss, turns, options);
  }

  /**
   * Queues a turn for any worker.
   *
   * With `idempotencyKey` (the HTTP `Idempotency-Key` header), submitting again with the same key
   * and session queues nothing: it answers the job the first submit queued (`replayed`). A client
   * whose request failed without an answer (its worker was killed, the connection dropped) can so
   * submit again, to any worker, without risking a second turn. The job's id is derived from the
   * session and the key; a key is remembered as long as the queue keeps the job (pg-boss's
   * archive: 7 days by default).
   * @throws HarnessError `SESSION_NOT_FOUND`, `EMPTY_PROMPT`, `UNKNOWN_PROVIDER`, `IDEMPOTENCY_KEY_REUSED` (the key
   *   queued a different turn).
   */
  async submit(sessionId: string, input: TurnInput, options: { idempotencyKey?: string } = {}): Promise<QueuedTurn> {
    this.turns.checkTurnInput(input);
    const id = options.idempotencyKey === undefined ? undefined : jobIdOf(sessionId, options.idempotencyKey);
    if (id !== undefined) {
      const earlier = await this.earlier(id, sessionId, input);
      if (earlier !== undefined) return earlier;
    }
    const { lastSeq } = await this.turns.getSession(sessionId);
    const jobId = await this.boss.send(TURN_QUEUE, { sessionId, input, afterSeq: lastSeq } satisfies TurnJob, id === undefined ? {} : { id });
    if (jobId !== null) return { sessionId, jobId, afterSeq: lastSeq };
    // Queued meanwhile by a concurrent submit with the same key.
    const earlier = id === undefined ? undefined : await this.earlier(id, sessionId, input);
    if (earlier === undefined) throw new HarnessError('QUEUE_UNAVAILABLE', 'The turn queue refused the job.');
    return earlier;
  }

  /** The job an earlier submit with the same key queued, if any. @throws HarnessError `IDEMPOTENCY_KEY_REUSED`. */
  private async earlier(id: string, sessionId: string, input: TurnInput): Promise<QueuedTurn | undefined> {
    const job = await this.boss.getJobById<TurnJob>(TURN_QUEUE, id, { includeArchive: true });
    if (job === null) return undefined;
    // The same turn: the same session and input (a retry's trace context may be a new one).
    const { trace: _then, ...then } = job.data.input;
    const { trace: _now, ...now } = input;
    if (job.data.sessionId !== sessionId || !isDeepStrictEqual(then, now)) {
      throw new HarnessError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for another turn; send a new key for a new turn.', { details: { sessionId } });
    }
    return { sessionId, jobId: id, afterSeq: job.data.afterSeq ?? 0, replayed: true };
  }

  /** Starts taking jobs (`concurrency` at a time). Idempotent. */
  async work(): Promise<void> {
    if (this.working) return;
    this.working = true;
    const pollingIntervalSeconds = this.options.pollingIntervalSeconds ?? 0.5;
    for (let i = 0; i < (this.options.concurrency ?? 4); i++) {
      await this.boss.work<TurnJob>(TURN_QUEUE, { batchSize: 1, pollingIntervalSeconds }, async ([job]) => {
        if (job === undefined) return;
        // Thrown: the job fails and is retried after retryDelay (a busy session, a closing worker).
        const result = await this.turns.runJob(job.data.sessionId, job.id, job.data.input);
        return result.outcome === 'ran' ? { outcome: 'ran', reason: result.end?.data.reason ?? null } : { outcome: result.outcome };
      });
    }
  }

  /** The state of a job (`created`, `active`, `retry`, `completed`, `failed`, …), or undefined. */
  async jobState(jobId: string): Promise<{ state: string; output?: unknown } | undefined> {
    const job = await this.boss.getJobById(TURN_QUEUE, jobId);
    return job === null ? undefined : { state: job.state, ...(job.output === undefined ? {} : { output: job.output }) };
  }

  /** Stops taking jobs and disconnects; jobs running here are aborted by the turn service's close. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.boss.stop({ graceful: false, wait: true, close: true });
  }
}

/** A job id (a UUID, version 8: RFC 9562's custom layout) from a session and an idempotency key. */
function jobIdOf(sessionId: string, key: string): string {
  const bytes = createHash('sha256').update(`harness-turn\n${sessionId}\n${key}`, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
}

function redactIn(text: string, url: string): string {
  const password = /\/\/[^:/@]*:([^@]*)@/.exec(url)?.[1];
  return password ? text.split(password).join('***') : text;
}
