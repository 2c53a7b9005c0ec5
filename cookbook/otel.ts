/**
 * Cookbook: OpenTelemetry traces of a turn — live to a collector, and again from the journal.
 * A stand-in collector (node:http on 127.0.0.1, decoding the OTLP/JSON the exporter sends) takes the
 * place of Jaeger, Tempo or an OpenTelemetry Collector; the turn is the offline scripted model on
 * the demo workspace (list the files, read one, answer).
 * Run: npx tsx cookbook/otel.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, readJournal, type HarnessConfig } from '../runtime/index.ts';
import { exportJournalTraces } from '../plugins/otel/index.ts';

const baseDir = fileURLToPath(new URL('.', import.meta.url));
const workspace = fileURLToPath(new URL('demo-workspace', import.meta.url));

type Value = { stringValue?: string; intValue?: string | number; arrayValue?: { values: Value[] } };
interface Span {
  name: string;
  spanId: string;
  parentSpanId?: string;
  startTimeUnixNano: string;
  attributes: { key: string; value: Value }[];
}

const show = (value: Value): string => (value.arrayValue ? value.arrayValue.values.map(show).join(',') : String(value.stringValue ?? value.intValue));

/** What a collector would show: each span as `name  key=value …`, indented under its parent. */
function tree(spans: readonly Span[]): string[] {
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    const children = spans.filter((s) => (s.parentSpanId || undefined) === parent).sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
    for (const span of children) {
      const attrs = span.attributes.filter((a) => /^gen_ai\.(provider|tool\.name|usage\.(input|output)_tokens|response\.finish)/.test(a.key));
      lines.push(`${'  '.repeat(depth)}${span.name}  ${attrs.map((a) => `${a.key}=${show(a.value)}`).join(' ')}`.trimEnd());
      walk(span.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

/** A stand-in collector: `POST /v1/traces` (OTLP/JSON) → spans; metrics are accepted and counted. */
async function collector() {
  const spans: Span[] = [];
  let metricRequests = 0;
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (text: string) => {
      body += text;
    });
    request.on('end', () => {
      if (request.url === '/v1/traces') for (const rs of JSON.parse(body).resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      else metricRequests++;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, spans, metricRequests: () => metricRequests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-otel-'));
  const live = await collector();
  try {
    // 1. The otel plugin next to the stack; `endpoint` is the collector's OTLP/HTTP base URL (leave it
    //    out to use OTEL_EXPORTER_OTLP_ENDPOINT). No prompt or completion text leaves the process.
    const config: HarnessConfig = {
      defaults: { provider: 'scripted', model: 'scripted-default' },
      plugins: [
        { module: '../plugins/llm-scripted/index.ts' },
        { module: '../plugins/tools-workspace/index.ts' },
        { module: '../plugins/approvals/index.ts' },
        { module: '../plugins/otel/index.ts', config: { endpoint: live.url, serviceName: 'cookbook-agent' } },
      ],
    };
    const harness = await createHarness({ config, baseDir, dataDir });
    const session = await harness.createSession({ cwd: workspace });
    await session.runToEnd('What is in this workspace?', { approve: harness.ctx.approvals!.create('read-only') });
    const stats = harness.ctx.otel!.stats;
    await harness.dispose(); // flushes what is queued (bounded by shutdownTimeoutMs)
    const liveTree = tree(live.spans);

    // 2. The same session, from its journal, after the fact: the same spans with the recorded times.
    const later = await collector();
    const report = await exportJournalTraces(session.id, readJournal(session.path), { endpoint: later.url });
    await later.close();
    return { liveTree, journalTree: tree(later.spans), exported: report.exportedSpanCount, dropped: stats().droppedSpanCount, metricRequests: live.metricRequests(), sessionId: session.id };
  } finally {
    await live.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await main();
  console.log(result.liveTree.join('\n'));
  console.log(`\nfrom the journal: ${result.exported} spans, the same tree: ${JSON.stringify(result.journalTree) === JSON.stringify(result.liveTree)}`);
}
