/**
 * Traces from a journal (issue 21 item 2): the events of any journal — recorded, imported, crashed
 * and repaired — through the same {@link SessionTracer} as the live plugin, with the recorded
 * timestamps, exported over OTLP/HTTP; what `harness export <session> --otel [endpoint]` runs.
 */
import { childSessionIndex, readJournal, secrets, storeSource, type AnySessionEvent, type ChildSessionIndex, type JournalStore } from '../../runtime/index.ts';
import { GenAiMetrics } from './metrics.ts';
import { OtelPipeline, parentFromTraceparent, tracesUrl, type SpanStats } from './pipeline.ts';
import { SessionTracer } from './trace-builder.ts';

export interface JournalExportOptions {
  /** OTLP/HTTP base URL; absent: the `OTEL_EXPORTER_OTLP_*` variables, else localhost:4318. */
  readonly endpoint?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly serviceName?: string;
  /** Export prompts, completions, tool arguments and results. Default false. */
  readonly captureContent?: boolean;
  readonly agentName?: string;
  /** Export the GenAI client metrics too (default true). */
  readonly metrics?: boolean;
  /** The parent of every turn span; absent: `TRACEPARENT` from the environment, else none. */
  readonly traceparent?: string;
  /** ms an export may take (default: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10000); a dead collector costs about this much. */
  readonly timeoutMs?: number;
  /**
   * The store the session's child sessions (subagents) are read from, to export their spans too,
   * under the parent's `execute_tool` span that ran each of their turns, as the live plugin does;
   * absent: the session's own spans only.
   */
  readonly store?: JournalStore;
}

export interface JournalExportReport extends SpanStats {
  /** Where the spans went. */
  readonly url: string;
  /** Events and turns of every session exported (the session and its children). */
  readonly eventCount: number;
  readonly turnCount: number;
  /** The session and the child sessions exported with it. */
  readonly sessionCount: number;
  /** False when the export did not finish within `timeoutMs`. */
  readonly complete: boolean;
}

/** Turns per forced export: a long journal never holds more than this many turns of spans. */
const TURNS_PER_FLUSH = 20;

/**
 * Exports the spans (and metrics) of one session's events, in journal order, and then (with
 * `store`) those of its child sessions, depth first.
 * @returns what was exported, dropped or failed, and where to.
 */
export async function exportJournalTraces(sessionId: string, events: Iterable<AnySessionEvent> | AsyncIterable<AnySessionEvent>, options: JournalExportOptions = {}): Promise<JournalExportReport> {
  const fromEnv = Number(process.env.OTEL_EXPORTER_OTLP_TIMEOUT);
  const timeoutMs = options.timeoutMs ?? (Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 10_000);
  const pipeline = new OtelPipeline({
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.headers === undefined ? {} : { headers: options.headers }),
    ...(options.serviceName === undefined ? {} : { serviceName: options.serviceName }),
    metrics: options.metrics ?? true,
    // Everything of a batch of turns is queued before it is exported: no drop for want of room.
    maxQueueSize: 1_000_000,
    maxExportBatchSize: 512,
    scheduledDelayMs: 200,
    exportTimeoutMs: timeoutMs,
    metricExportIntervalMs: 3_600_000,
  });
  const redactor = secrets();
  for (const [name, value] of Object.entries(options.headers ?? {})) redactor.add(value, `otel header ${name}`);
  const parent = parentFromTraceparent(options.traceparent ?? process.env.TRACEPARENT, process.env.TRACESTATE);
  const metrics = pipeline.meter === undefined ? undefined : new GenAiMetrics(pipeline.meter);
  let eventCount = 0;
  let turnCount = 0;
  let sessionCount = 0;
  let complete = true;
  let index: ChildSessionIndex | undefined;
  const traceSession = async (
    id: string,
    sessionEvents: Iterable<AnySessionEvent> | AsyncIterable<AnySessionEvent>,
    spawnedBy?: (atMs: number) => ReturnType<SessionTracer['childParent']>,
  ): Promise<void> => {
    const tracer = new SessionTracer({
      tracer: pipeline.tracer,
      ...(metrics === undefined ? {} : { metrics }),
      sessionId: id,
      ...(parent === undefined ? {} : { parent }),
      ...(spawnedBy === undefined ? {} : { spawnedBy }),
      captureContent: options.captureContent ?? false,
      agentName: options.agentName ?? 'harness',
      redact: (text) => redactor.redact(text),
    });
    sessionCount++;
    for await (const event of sessionEvents) {
      tracer.push(event);
      eventCount++;
      if (event.type === 'turn/end' && ++turnCount % TURNS_PER_FLUSH === 0) complete = (await pipeline.flush(2 * timeoutMs)) && complete;
    }
    tracer.close();
    // The parent's whole journal is read first: every call that ran a child's turn is known then.
    const store = options.store;
    if (store === undefined) return;
    // One listing of the store for the whole tree (a listing reads every session of the store).
    index ??= await childSessionIndex(store);
    for (const child of index.get(id) ?? []) {
      const link = child.parentSession;
      await traceSession(child.id, readJournal(storeSource(store, child.id)), (atMs) => tracer.childParent(child.id, link?.callId, atMs));
    }
  };
  try {
    await traceSession(sessionId, events);
  } finally {
    complete = (await pipeline.shutdown(2 * timeoutMs)) && complete;
  }
  return { url: tracesUrl(options.endpoint), eventCount, turnCount, sessionCount, complete, ...pipeline.stats() };
}
