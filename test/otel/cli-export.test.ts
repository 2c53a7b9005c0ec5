/**
 * `harness export <session> --otel [endpoint]` (issue 21 item 2): the real CLI sends a recorded
 * session's spans to a real OTLP/HTTP receiver on 127.0.0.1 with the journal's times; TRACEPARENT
 * parents them; a collector that is not there is an OTEL_EXPORT_FAILED error; --otel with -o is a
 * usage error.
 */
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, readEvents, tempDir } from '../cli/support.ts';
import { startOtlpReceiver } from './receiver.ts';

const home = tempDir('harness-otel-cli-');
const workspace = join(home.dir, 'workspace');
mkdirSync(workspace, { recursive: true });
afterAll(() => home.cleanup());
const cli = (args: readonly string[], env: Record<string, string> = {}) => harness(args, { home: join(home.dir, 'home'), cwd: workspace, env });

describe('harness export --otel', { timeout: 120_000 }, () => {
  it('sends the spans of a recorded session, with its recorded times, parented by TRACEPARENT; a dead collector fails loudly', async () => {
    const ran = await cli(['run', 'What is in this workspace?']);
    expect(ran.code, ran.stderr).toBe(0);
    const path = /(\S+\/sessions\/[0-9a-f-]{36}\.jsonl)/.exec(ran.stdout)![1]!;
    const id = /([0-9a-f-]{36})\.jsonl$/.exec(path)![1]!;
    const events = readEvents(path);

    const receiver = await startOtlpReceiver();
    try {
      const exported = await cli(['export', id.slice(0, 8), '--otel', receiver.url], { TRACEPARENT: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout).toBe(`exported ${id}: ${receiver.spans.length} spans of 1 turn(s) → ${receiver.url}/v1/traces\n`);
      const root = receiver.spans.find((span) => span.name === 'invoke_agent harness')!;
      expect([root.traceId, root.parentSpanId]).toEqual(['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331']);
      const turnStart = events.find((event) => event.type === 'turn/start') as unknown as { atMs: number };
      expect(root.startMs).toBe(turnStart.atMs);
      expect(root.attributes['gen_ai.conversation.id']).toBe(id);
      expect(receiver.spans.filter((span) => span.name.startsWith('execute_tool ')).length).toBe(events.filter((event) => event.type === 'tool/result').length);
      expect(receiver.metrics.map((metric) => metric.name)).toContain('gen_ai.client.token.usage');
    } finally {
      await receiver.close();
    }

    // Nothing listens there.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const dead = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const failed = await cli(['export', id, '--otel', dead], { OTEL_EXPORTER_OTLP_TIMEOUT: '1000' });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('error OTEL_EXPORT_FAILED');
    expect(failed.stderr).toContain(`${dead}/v1/traces`);

    const both = await cli(['export', id, '--otel', '-o', join(home.dir, 'x.jsonl')]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('error INVALID_ARGUMENTS');
  });
});
