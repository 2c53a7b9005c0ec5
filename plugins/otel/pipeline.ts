/**
 * The OpenTelemetry SDK side: a tracer provider with a BatchSpanProcessor (bounded queue) over the
 * OTLP/HTTP (JSON) trace exporter, a meter provider with a periodic OTLP/HTTP metric reader, the
 * resource (`service.name`, `OTEL_RESOURCE_ATTRIBUTES`), and the incoming `TRACEPARENT`.
 *
 * Where spans go: `endpoint` (a base URL; `/v1/traces` and `/v1/metrics` are appended), else the
 * standard variables the exporters read themselves (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
 * …), else `http://localhost:4318`.
 *
 * A slow or dead collector costs a turn nothing: ending a span only queues it; export runs on timers.
 * A full queue drops spans — counted through the processor's own self-observability counter
 * (`otel.sdk.processor.span.processed` with `error.type` `queue_full`), as are spans whose export
 * failed; {@link OtelPipeline.stats} reports both. Shutdown is bounded (`shutdownTimeoutMs`).
 */
import { createNoopMeter, defaultTextMapGetter, ROOT_CONTEXT, type Attributes, type Context, type Meter, type MeterProvider as ApiMeterProvider, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';

export interface OtelPipelineOptions {
  /** OTLP/HTTP base URL (`http://127.0.0.1:4318`); absent: the `OTEL_EXPORTER_OTLP_*` variables, else localhost:4318. */
  readonly endpoint?: string;
  /** Extra HTTP headers of the export requests (e.g. a collector's token); never exported, never printed. */
  readonly headers?: Readonly<Record<string, string>>;
  /** `service.name`; absent: `OTEL_SERVICE_NAME`, else `harness`. */
  readonly serviceName?: string;
  /** Export the GenAI client metrics too. */
  readonly metrics: boolean;
  /** Spans held for export at most; beyond it spans are dropped (and counted). */
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  /** ms between two exports of queued spans. */
  readonly scheduledDelayMs: number;
  /** ms an export request may take before it is abandoned. */
  readonly exportTimeoutMs: number;
  /** ms between two metric exports. */
  readonly metricExportIntervalMs: number;
  /** Replaces the OTLP trace exporter (tests). */
  readonly traceExporter?: SpanExporter;
}

/** What happened to the spans handed to the pipeline. */
export interface SpanStats {
  /** Spans the collector accepted. */
  readonly exportedSpanCount: number;
  /** Spans dropped because the queue was full (the collector was slow or down). */
  readonly droppedSpanCount: number;
  /** Spans whose export failed (refused, timed out). */
  readonly failedSpanCount: number;
}

const PROCESSED_SPANS = 'otel.sdk.processor.span.processed';

/** The default OTLP/HTTP endpoint of the SDK. */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

/** Where traces go, for messages: the config's endpoint, else the standard variables, else the default. */
export function tracesUrl(endpoint: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (endpoint !== undefined) return signalUrl(endpoint, 'traces');
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  return signalUrl(env.OTEL_EXPORTER_OTLP_ENDPOINT || DEFAULT_OTLP_ENDPOINT, 'traces');
}

function signalUrl(base: string, signal: 'traces' | 'metrics'): string {
  return `${base.replace(/\/+$/, '')}/v1/${signal}`;
}

/**
 * The parent context of an incoming W3C `traceparent` (+ `tracestate`), or undefined when there is
 * none or it does not parse (a malformed value is ignored, as the W3C spec asks).
 */
export function parentFromTraceparent(traceparent: string | undefined, tracestate?: string): Context | undefined {
  if (traceparent === undefined || traceparent.trim() === '') return undefined;
  const carrier: Record<string, string> = { traceparent: traceparent.trim(), ...(tracestate ? { tracestate } : {}) };
  const extracted = new W3CTraceContextPropagator().extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  return extracted === ROOT_CONTEXT ? undefined : extracted;
}

export class OtelPipeline {
  readonly tracer: Tracer;
  readonly meter: Meter | undefined;
  private readonly tracerProvider: BasicTracerProvider;
  private readonly traceExporter: SpanExporter;
  private readonly meterProvider: MeterProvider | undefined;
  private exported = 0;
  private dropped = 0;
  private failed = 0;
  private shutdownPromise: Promise<boolean> | undefined;

  constructor(options: OtelPipelineOptions) {
    const headers = options.headers === undefined ? {} : { headers: { ...options.headers } };
    const serviceName = options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'harness';
    const resource = defaultResource()
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes({ 'service.name': serviceName }));
    const exporter =
      options.traceExporter ?? new OTLPTraceExporter({ ...(options.endpoint === undefined ? {} : { url: signalUrl(options.endpoint, 'traces') }), ...headers, timeoutMillis: options.exportTimeoutMs });
    this.traceExporter = exporter;
    const processor = new BatchSpanProcessor(exporter, {
      maxQueueSize: options.maxQueueSize,
      maxExportBatchSize: Math.min(options.maxExportBatchSize, options.maxQueueSize),
      scheduledDelayMillis: options.scheduledDelayMs,
      exportTimeoutMillis: options.exportTimeoutMs,
      selfObsMeterProvider: this.countingMeterProvider(),
    } as ConstructorParameters<typeof BatchSpanProcessor>[1]);
    this.tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
    this.tracer = this.tracerProvider.getTracer('harness-runtime/plugins/otel');
    if (options.metrics) {
      const metricExporter = new OTLPMetricExporter({ ...(options.endpoint === undefined ? {} : { url: signalUrl(options.endpoint, 'metrics') }), ...headers, timeoutMillis: options.exportTimeoutMs });
      const reader = new PeriodicExportingMetricReader({
        exporter: metricExporter,
        exportIntervalMillis: options.metricExportIntervalMs,
        exportTimeoutMillis: Math.min(options.exportTimeoutMs, options.metricExportIntervalMs),
      });
      this.meterProvider = new MeterProvider({ resource, readers: [reader] });
      this.meter = this.meterProvider.getMeter('harness-runtime/plugins/otel');
    } else {
      this.meterProvider = undefined;
      this.meter = undefined;
    }
  }

  stats(): SpanStats {
    return { exportedSpanCount: this.exported, droppedSpanCount: this.dropped, failedSpanCount: this.failed };
  }

  /**
   * Exports what is queued and waits for the exports already under way; false when that did not
   * finish within `timeoutMs` (or failed). The processor's own `forceFlush` only exports what is
   * still queued: spans its timer already handed to the exporter may still be on the wire, so the
   * exporter's `forceFlush` (its in-flight requests) is awaited after it.
   */
  async flush(timeoutMs: number): Promise<boolean> {
    const traces = this.tracerProvider.forceFlush().then(() => this.traceExporter.forceFlush?.());
    return bounded(Promise.all([traces, this.meterProvider?.forceFlush()]), timeoutMs);
  }

  /** Flushes and stops; false when that did not finish within `timeoutMs` (what was left is lost). */
  shutdown(timeoutMs: number): Promise<boolean> {
    this.shutdownPromise ??= bounded(Promise.all([this.tracerProvider.shutdown(), this.meterProvider?.shutdown()]), timeoutMs);
    return this.shutdownPromise;
  }

  /**
   * The processor's self-observability meter, reduced to what we count: spans processed, by outcome
   * (no `error.type`: exported; `queue_full`: dropped; another: the export failed).
   */
  private countingMeterProvider(): ApiMeterProvider {
    const noop = createNoopMeter();
    const meter: Meter = Object.create(noop);
    meter.createCounter = ((name: string, options?: object) => {
      if (name !== PROCESSED_SPANS) return noop.createCounter(name, options);
      return {
        add: (value: number, attributes?: Attributes) => {
          const errorType = attributes?.['error.type'];
          if (errorType === undefined) this.exported += value;
          else if (errorType === 'queue_full') this.dropped += value;
          else this.failed += value;
        },
      };
    }) as Meter['createCounter'];
    return { getMeter: () => meter };
  }
}

/** The longest delay `setTimeout` takes, ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

async function bounded(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  // No limit: setTimeout would take Infinity (or anything past 2^31 - 1 ms) as 1 ms.
  if (timeoutMs > MAX_TIMER_MS) {
    return work.then(
      () => true,
      () => false,
    );
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
