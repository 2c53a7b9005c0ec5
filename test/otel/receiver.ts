/**
 * A test OTLP/HTTP receiver on 127.0.0.1: a node:http server taking what the official JSON exporters
 * send (`POST /v1/traces`, `POST /v1/metrics`, `application/json`), keeping each raw body and
 * decoding the spans and metric points. `stall()` makes it accept requests and never answer (a
 * collector that hangs).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: OtlpValue[] } };
type OtlpAttribute = { key: string; value: OtlpValue };

/** A received span, decoded: attributes as plain values (int64 as numbers). */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  /** The W3C tracestate the span carries (its parent's), when there is one. */
  readonly traceState?: string;
  readonly name: string;
  /** OTLP enum: 1 INTERNAL, 3 CLIENT. */
  readonly kind: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Record<string, unknown>;
  readonly events: readonly { readonly name: string; readonly atMs: number; readonly attributes: Record<string, unknown> }[];
  /** OTLP enum: 0 UNSET, 1 OK, 2 ERROR. */
  readonly status: { readonly code: number; readonly message?: string };
  readonly resource: Record<string, unknown>;
}

export interface ReceivedMetric {
  readonly name: string;
  readonly unit?: string;
  /** Histogram points: attributes, count, sum. */
  readonly points: readonly { readonly attributes: Record<string, unknown>; readonly count: number; readonly sum?: number }[];
}

export interface OtlpReceiver {
  /** Base URL (`http://127.0.0.1:<port>`), the plugin's `endpoint`. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  readonly metrics: ReceivedMetric[];
  /** Every request body as received, to search for text that must not be there. */
  readonly bodies: string[];
  readonly headers: Record<string, string | string[] | undefined>[];
  /** From now on, hold every request open without an answer. */
  stall(): void;
  /** From now on, take and answer each request `ms` later (a slow collector); 0 answers at once. */
  answerAfter(ms: number): void;
  /** Requests received and not answered yet. */
  readonly pendingCount: number;
  /** Resolves once `count` spans have arrived (rejects after `timeoutMs`). */
  waitForSpans(count: number, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

function decodeValue(value: OtlpValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(decodeValue);
  return undefined;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const attribute of list ?? []) out[attribute.key] = decodeValue(attribute.value);
  return out;
}

const msOf = (nanos: string | number): number => Number(BigInt(nanos) / 1_000_000n);

function decodeTraces(body: unknown): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (body as { resourceSpans?: unknown[] }).resourceSpans ?? []) {
    const resource = attributesOf((rs as { resource?: { attributes?: OtlpAttribute[] } }).resource?.attributes);
    for (const ss of (rs as { scopeSpans?: unknown[] }).scopeSpans ?? []) {
      for (const span of (ss as { spans?: Record<string, unknown>[] }).spans ?? []) {
        out.push({
          traceId: span.traceId as string,
          spanId: span.spanId as string,
          ...(span.parentSpanId ? { parentSpanId: span.parentSpanId as string } : {}),
          ...(span.traceState ? { traceState: span.traceState as string } : {}),
          name: span.name as string,
          kind: span.kind as number,
          startMs: msOf(span.startTimeUnixNano as string),
          endMs: msOf(span.endTimeUnixNano as string),
          attributes: attributesOf(span.attributes as OtlpAttribute[]),
          events: ((span.events as { name: string; timeUnixNano: string; attributes?: OtlpAttribute[] }[]) ?? []).map((event) => ({
            name: event.name,
            atMs: msOf(event.timeUnixNano),
            attributes: attributesOf(event.attributes),
          })),
          status: {
            code: (span.status as { code?: number } | undefined)?.code ?? 0,
            ...((span.status as { message?: string } | undefined)?.message ? { message: (span.status as { message: string }).message } : {}),
          },
          resource,
        });
      }
    }
  }
  return out;
}

function decodeMetrics(body: unknown): ReceivedMetric[] {
  const out: ReceivedMetric[] = [];
  for (const rm of (body as { resourceMetrics?: unknown[] }).resourceMetrics ?? []) {
    for (const sm of (rm as { scopeMetrics?: unknown[] }).scopeMetrics ?? []) {
      for (const metric of (sm as { metrics?: Record<string, unknown>[] }).metrics ?? []) {
        const histogram = metric.histogram as { dataPoints?: { attributes?: OtlpAttribute[]; count: string | number; sum?: number }[] } | undefined;
        out.push({
          name: metric.name as string,
          ...(metric.unit ? { unit: metric.unit as string } : {}),
          points: (histogram?.dataPoints ?? []).map((point) => ({ attributes: attributesOf(point.attributes), count: Number(point.count), ...(point.sum === undefined ? {} : { sum: point.sum }) })),
        });
      }
    }
  }
  return out;
}

/** Starts a receiver on 127.0.0.1 (a free port). */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetric[] = [];
  const bodies: string[] = [];
  const headers: Record<string, string | string[] | undefined>[] = [];
  const held: ServerResponse[] = [];
  const waiters: (() => void)[] = [];
  let stalled = false;
  let answerAfterMs = 0;
  let pendingCount = 0;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (stalled) {
        held.push(response);
        return;
      }
      if (answerAfterMs === 0) return take(request, chunks, response);
      pendingCount++;
      setTimeout(() => {
        pendingCount--;
        take(request, chunks, response);
      }, answerAfterMs);
    });
  });
  const take = (request: IncomingMessage, chunks: Buffer[], response: ServerResponse): void => {
    const text = Buffer.concat(chunks).toString('utf8');
    bodies.push(text);
    headers.push(request.headers);
    if (request.method !== 'POST' || !String(request.headers['content-type']).startsWith('application/json')) {
      response.writeHead(415).end();
      return;
    }
    const body = JSON.parse(text) as unknown;
    if (request.url === '/v1/traces') spans.push(...decodeTraces(body));
    else if (request.url === '/v1/metrics') metrics.push(...decodeMetrics(body));
    else {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    for (const wake of waiters.splice(0)) wake();
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metrics,
    bodies,
    headers,
    stall() {
      stalled = true;
    },
    answerAfter(ms) {
      answerAfterMs = ms;
    },
    get pendingCount() {
      return pendingCount;
    },
    async waitForSpans(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (spans.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`The receiver got ${spans.length} spans, not ${count}, within ${timeoutMs} ms.`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 100));
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return spans;
    },
    async close() {
      for (const response of held.splice(0)) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Receivers for the tests of one file, each closed after the test that started it: call at the
 * file's top level, before the file's own `afterEach` (vitest runs after-hooks last-registered
 * first, so a harness the file disposes is gone before its receiver closes); `await receiver()`
 * in a test starts one.
 */
export function receiverPerTest(): () => Promise<OtlpReceiver> {
  const started: OtlpReceiver[] = [];
  afterEach(async () => {
    for (const receiver of started.splice(0)) await receiver.close();
  });
  return async () => {
    const receiver = await startOtlpReceiver();
    started.push(receiver);
    return receiver;
  };
}
