/**
 * plugins/otel — OpenTelemetry traces and GenAI metrics of turns, steps, model calls and tool calls,
 * live, over OTLP/HTTP (issue 21; cookbook/otel.md).
 *
 * A projection of the journal: the plugin observes every journaled event on the `session/event`
 * sink and feeds it to the same {@link SessionTracer} that `harness export <session> --otel` feeds
 * from a journal, so a live run's spans and its journal's spans are the same (ids aside). A turn's
 * own W3C trace context (journaled on its `turn/start`: `session.run(…, { trace })`, a `traceparent`
 * header in `harness serve`) parents its spans; a child session's turns (a subagent, whose
 * deliveries carry `parentSession`) hang under the parent's `execute_tool` span that ran them. The sink
 * only queues (a span is built and ended synchronously; the BatchSpanProcessor exports on its own
 * timer), so a slow or dead collector never slows or fails a turn: a full queue drops spans, counted
 * (`ctx.otel.stats()`, and an `OTEL_SPANS_DROPPED` warning when the plugin unloads).
 *
 * Config (all optional): `endpoint` (OTLP/HTTP base URL; else `OTEL_EXPORTER_OTLP_*`, else
 * localhost:4318), `headers`, `serviceName` (else `OTEL_SERVICE_NAME`, else `harness`),
 * `captureContent` (default false: no prompt, completion, tool argument or result is exported),
 * `agentName`, `metrics`, `maxIdleSessions`, `traceparent` (else `TRACEPARENT`/`TRACESTATE` from the environment: the
 * parent of every turn span), queue and timing bounds. `OTEL_SDK_DISABLED=true` turns it off.
 * Secrets: content attributes pass the process's secret redactor; header values are registered
 * with it; API keys are never read.
 *
 * Memory: a session's tracer lives while one of its turns is open. When the turn ends the tracer is
 * released (its spans, and every per-tool-call record — a subagent child's turns all ran inside the
 * parent's calls by then; a kept child's later turn comes through `input_subagent`, whose
 * `subagent/input` record names its new call) and only a summary is kept: the session's last call
 * config (a `request/header` is journaled only when it changes), its last event time, and with
 * `captureContent` its snapshot reader (which holds the session's surface — its messages since
 * its last compaction — and its last request: that is what capturing content costs; what a
 * compaction replaced is let go, so a compacted session stays flat per turn). Summaries are kept for the `maxIdleSessions` (default 1024) sessions traced last;
 * the next turn of a session whose summary was dropped names its model calls by the model the
 * reply reports, and a failed call's provider and model `unknown`, until the session journals its
 * header again (every reopened session does, on its first call).
 *
 * Hot reload: spans of a turn that is running while the plugin is replaced are ended as
 * `PLUGIN_UNLOADED`; the new generation traces from the next turn on.
 */
import { definePlugin, HarnessError, secrets, z, type SessionEventDelivery } from '../../runtime/index.ts';
import { GenAiMetrics } from './metrics.ts';
import { OtelPipeline, parentFromTraceparent, tracesUrl, type SpanStats } from './pipeline.ts';
import { SessionTracer, type SessionTracerSummary } from './trace-builder.ts';

export { SessionTracer, hrTimeOf, type SessionTracerOptions, type SessionTracerSummary } from './trace-builder.ts';
export { GenAiMetrics, type CallMeasurement } from './metrics.ts';
export { OtelPipeline, parentFromTraceparent, tracesUrl, DEFAULT_OTLP_ENDPOINT, type OtelPipelineOptions, type SpanStats } from './pipeline.ts';
export { exportJournalTraces, type JournalExportOptions, type JournalExportReport } from './export.ts';
export { GEN_AI, HARNESS, METRIC, OPERATION, ERROR_TYPE } from './conventions.ts';

/** `ctx.otel`: what the live plugin did with its spans. */
export interface OtelService {
  /** Where traces go (for messages). */
  readonly tracesUrl: string;
  stats(): SpanStats;
  /**
   * Sessions the plugin holds something of: `tracingSessionCount` with a turn open (a tracer and its
   * open spans), `idleSessionCount` with only a summary between turns (at most `maxIdleSessions`).
   */
  sessionCounts(): { readonly tracingSessionCount: number; readonly idleSessionCount: number };
  /**
   * Exports what is queued now and waits for the exports under way; false when that did not finish
   * (or failed) within `timeoutMs` ms (default the config's `shutdownTimeoutMs`; `Infinity`: no limit).
   * @throws (rejects) HarnessError `INVALID_ARGUMENTS` for a `timeoutMs` that is negative or not a number.
   */
  flush(timeoutMs?: number): Promise<boolean>;
}

declare global {
  namespace Harness {
    interface Services {
      otel?: OtelService;
    }
  }
}

/** The plugin's config (every key optional). */
export const otelConfigSchema = z
  .strictObject({
    endpoint: z.url({ protocol: /^https?$/, error: 'endpoint must be an http(s) URL, e.g. http://127.0.0.1:4318' }).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    serviceName: z.string().min(1).optional(),
    captureContent: z.boolean().default(false),
    agentName: z.string().min(1).default('harness'),
    metrics: z.boolean().default(true),
    maxIdleSessions: z.number().int().nonnegative().default(1024),
    traceparent: z.string().optional(),
    maxQueueSize: z.number().int().positive().default(2048),
    maxExportBatchSize: z.number().int().positive().default(512),
    scheduledDelayMs: z.number().int().nonnegative().default(1000),
    exportTimeoutMs: z.number().int().positive().default(10_000),
    metricExportIntervalMs: z.number().int().positive().default(60_000),
    shutdownTimeoutMs: z.number().int().nonnegative().default(3000),
  })
  .default({
    captureContent: false,
    agentName: 'harness',
    metrics: true,
    maxIdleSessions: 1024,
    maxQueueSize: 2048,
    maxExportBatchSize: 512,
    scheduledDelayMs: 1000,
    exportTimeoutMs: 10_000,
    metricExportIntervalMs: 60_000,
    shutdownTimeoutMs: 3000,
  });

export type OtelConfig = z.output<typeof otelConfigSchema>;

export default definePlugin({
  name: 'otel',
  config: otelConfigSchema,
  setup(ctx, config) {
    if (process.env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
      ctx.report({ level: 'info', code: 'OTEL_DISABLED', message: 'OTEL_SDK_DISABLED=true: the otel plugin exports nothing.' });
      return;
    }
    const redactor = secrets();
    for (const [name, value] of Object.entries(config.headers ?? {})) redactor.add(value, `otel header ${name}`);
    const pipeline = new OtelPipeline({
      ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
      ...(config.headers === undefined ? {} : { headers: config.headers }),
      ...(config.serviceName === undefined ? {} : { serviceName: config.serviceName }),
      metrics: config.metrics,
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: config.maxExportBatchSize,
      scheduledDelayMs: config.scheduledDelayMs,
      exportTimeoutMs: config.exportTimeoutMs,
      metricExportIntervalMs: config.metricExportIntervalMs,
    });
    const metrics = pipeline.meter === undefined ? undefined : new GenAiMetrics(pipeline.meter);
    const parent = parentFromTraceparent(config.traceparent ?? process.env.TRACEPARENT, process.env.TRACESTATE);
    const url = tracesUrl(config.endpoint);
    // Sessions with a turn open; and, between turns, the summaries of the last `maxIdleSessions`
    // sessions, least recently traced first (a Map keeps insertion order).
    const tracers = new Map<string, SessionTracer>();
    const idle = new Map<string, SessionTracerSummary>();
    const rest = (sessionId: string, tracer: SessionTracer): void => {
      tracers.delete(sessionId);
      if (config.maxIdleSessions === 0) return;
      idle.set(sessionId, tracer.summary());
      if (idle.size > config.maxIdleSessions) idle.delete(idle.keys().next().value!);
    };
    let failed = false;
    ctx.declareHook('session/event', 'sink');
    ctx.on('session/event', ({ sessionId, event, parentSession: link }: SessionEventDelivery) => {
      try {
        let tracer = tracers.get(sessionId);
        if (tracer === undefined) {
          const resume = idle.get(sessionId);
          idle.delete(sessionId);
          // A child session (a subagent): its turns hang under the parent's execute_tool span that ran them.
          const spawnedBy = link === undefined ? undefined : (atMs: number) => tracers.get(link.sessionId)?.childParent(sessionId, link.callId, atMs);
          tracer = new SessionTracer({
            tracer: pipeline.tracer,
            ...(metrics === undefined ? {} : { metrics }),
            sessionId,
            ...(parent === undefined ? {} : { parent }),
            ...(spawnedBy === undefined ? {} : { spawnedBy }),
            captureContent: config.captureContent,
            agentName: config.agentName,
            redact: (text) => redactor.redact(text),
            ...(resume === undefined ? {} : { resume }),
          });
          tracers.set(sessionId, tracer);
        }
        tracer.push(event);
        if (tracer.idle) rest(sessionId, tracer);
      } catch (error) {
        // Tracing never fails a journal append; the first failure is reported, the rest are not.
        if (failed) return;
        failed = true;
        ctx.report({
          level: 'warning',
          code: 'OTEL_TRACE_FAILED',
          message: `Tracing session ${sessionId} failed at seq ${event.seq} (${event.type}): ${error instanceof Error ? error.message : String(error)}`,
        });
      }
    });
    ctx.provide('otel', {
      tracesUrl: url,
      stats: () => pipeline.stats(),
      sessionCounts: () => ({ tracingSessionCount: tracers.size, idleSessionCount: idle.size }),
      flush: (timeoutMs = config.shutdownTimeoutMs) => {
        if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
          return Promise.reject(
            new HarnessError('INVALID_ARGUMENTS', `otel.flush(timeoutMs): timeoutMs must be a number of ms, 0 or more (Infinity: wait as long as it takes); got ${String(timeoutMs)}.`, {
              details: { timeoutMs: String(timeoutMs) },
            }),
          );
        }
        return pipeline.flush(timeoutMs);
      },
    });
    ctx.onDispose(async () => {
      for (const tracer of tracers.values()) tracer.close(Date.now(), 'PLUGIN_UNLOADED');
      tracers.clear();
      idle.clear();
      const finished = await pipeline.shutdown(config.shutdownTimeoutMs);
      const { droppedSpanCount, failedSpanCount } = pipeline.stats();
      if (droppedSpanCount > 0 || failedSpanCount > 0 || !finished) {
        const parts = [
          ...(droppedSpanCount > 0 ? [`${droppedSpanCount} span(s) dropped (the export queue of ${config.maxQueueSize} was full)`] : []),
          ...(failedSpanCount > 0 ? [`${failedSpanCount} span(s) failed to export`] : []),
          ...(finished ? [] : [`the last export did not finish within ${config.shutdownTimeoutMs} ms (what it held is lost)`]),
        ];
        ctx.report({ level: 'warning', code: 'OTEL_SPANS_DROPPED', message: `Traces to ${url}: ${parts.join('; ')}. Is the collector running?` });
      }
    });
  },
});
