/**
 * Tool lists that change: `notifications/tools/list_changed` from a server adds a tool that the next
 * model request offers (asserted on the journaled `request/snapshot`), and a hot reload of the mcp
 * config adds and removes servers while the ones that stay keep running (same process, same MCP
 * session, a call in flight answered).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mcp, { heldConnections } from '../../plugins/mcp/index.ts';
import type { AnySessionEvent, SessionEvent } from '../../runtime/index.ts';
import { createTestHarness, runTurn, type TestHarness } from '../../testing/index.ts';
import { alive, type HttpServer, startHttpServer, stateLines, stdioServer, tempDir, waitFor } from './support.ts';

const results = (events: readonly AnySessionEvent[]) => events.filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result').map((e) => e.data);
const text = (result: SessionEvent<'tool/result'>['data']) => result.message.content.flatMap((b) => (b.type === 'tool-result' ? b.content.map((p) => (p.type === 'text' ? p.text : '')) : [])).join('');
const snapshots = (events: readonly AnySessionEvent[]) => events.filter((e): e is SessionEvent<'request/snapshot'> => e.type === 'request/snapshot').map((e) => e.data);

/** Step 1 calls the tool named in the prompt; step 2 calls `<server>__extra` if the request offers it; then answers. */
const script = (context: { step: number; prompt: string; hasTool(name: string): boolean; toolResults: readonly { text: string }[] }) => {
  const space = context.prompt.indexOf(' ');
  const [name, args] = space < 0 ? [context.prompt, '{}'] : [context.prompt.slice(0, space), context.prompt.slice(space + 1)];
  const extra = `${name.split('__')[0]}__extra`;
  if (context.step === 1) return { toolCalls: [{ name, arguments: args }] };
  if (context.step === 2 && name.endsWith('__enable_extra')) return context.hasTool(extra) ? { toolCalls: [{ name: extra, arguments: { n: 21 } }] } : { text: 'no extra tool offered' };
  return { text: context.toolResults.map((r) => r.text).join(' | ') };
};

describe('mcp: notifications/tools/list_changed', { timeout: 60_000 }, () => {
  const temp = tempDir();
  let http: HttpServer;
  let harness: TestHarness;

  beforeAll(async () => {
    http = await startHttpServer();
    harness = await createTestHarness({
      script,
      plugins: [{ plugin: mcp, config: { servers: [stdioServer('demo', temp.file('state.txt')), { name: 'remote', transport: 'http', url: http.url }] } }],
    });
  });
  afterAll(async () => {
    await harness?.dispose();
    await http?.stop();
    temp.remove();
  });

  it('stdio: a tool the server adds during a call is offered by the very next request of the turn', async () => {
    const turn = await runTurn(harness, 'demo__enable_extra');
    const [first, second] = snapshots(turn.events);
    // The first request of the turn had no demo__extra; the second one (the step after the call) has it, with the server's schema.
    expect(first!.tools!.map((t) => t.name)).not.toContain('demo__extra');
    const offered = second!.tools!.find((t) => t.name === 'demo__extra');
    expect(offered).toMatchObject({ description: 'A tool that appeared at run time.', inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } });
    expect(results(turn.events).map((r) => [r.code, text(r)])).toEqual([
      [undefined, 'extra enabled'],
      [undefined, 'extra: 42'],
    ]);
    expect(turn.text).toBe('extra enabled | extra: 42');
  });

  it('Streamable HTTP: the notification comes on the session stream; the tool is registered and the next turn’s request offers it', async () => {
    expect(harness.ctx.tools.has('remote__extra')).toBe(false);
    const session = await harness.createSession();
    await runTurn(session, 'remote__enable_extra');
    await waitFor('remote__extra to be registered', () => harness.ctx.tools.has('remote__extra'));
    const next = await runTurn(session, 'remote__extra {"n":4}');
    // The snapshot writes tools only when they changed since the session's previous request: they did.
    expect(snapshots(next.events)[0]!.tools?.map((t) => t.name)).toContain('remote__extra');
    expect(results(next.events).map((r) => [r.code, text(r)])).toEqual([[undefined, 'extra: 8']]);
  });
});

describe('mcp: hot reload of the config', { timeout: 90_000 }, () => {
  const temp = tempDir();
  const stateA = temp.file('a.txt');
  const stateB = temp.file('b.txt');
  let http: HttpServer;
  let harness: TestHarness;
  const a = stdioServer('a', stateA);
  let b: { name: string; transport: 'http'; url: string };

  beforeAll(async () => {
    http = await startHttpServer({ env: { MCP_STATE_FILE: stateB } });
    b = { name: 'b', transport: 'http', url: http.url };
    harness = await createTestHarness({ script, plugins: [{ plugin: mcp, config: { servers: [a] } }] });
  });
  afterAll(async () => {
    await harness?.dispose();
    await http?.stop();
    temp.remove();
  });

  const startedA = () => stateLines(stateA).filter((line) => line.startsWith('started '));
  const sessionsB = () => stateLines(stateB).filter((line) => line.startsWith('session '));

  it('adding a server keeps the one that stays running: same process, and its call in flight is answered', async () => {
    expect(startedA()).toHaveLength(1);
    const pidA = Number(startedA()[0]!.split(' ')[1]);
    const inFlight = runTurn(harness, 'a__slow {"ms":1500}');
    await waitFor('the slow call to start', () => stateLines(stateA).some((line) => line.startsWith('slow-started ')));
    await harness.host.reload('mcp', { config: { servers: [a, b] } });
    expect(harness.ctx.tools.has('a__echo')).toBe(true);
    expect(harness.ctx.tools.has('b__echo')).toBe(true);
    const turn = await inFlight;
    expect(results(turn.events).map((r) => [r.code, text(r)])).toEqual([[undefined, 'slept 1500 ms']]);
    expect(startedA()).toHaveLength(1);
    expect(alive(pidA)).toBe(true);
    const both = await runTurn(harness, 'b__echo {"text":"new"}');
    expect(results(both.events).map((r) => text(r))).toEqual(['echo (http): new']);
    expect(sessionsB()).toHaveLength(1);
  });

  it('removing a server stops it and drops its tools; the one that stays keeps its MCP session', async () => {
    const pidA = Number(startedA()[0]!.split(' ')[1]);
    await harness.host.reload('mcp', { config: { servers: [b] } });
    expect(harness.ctx.tools.ids().filter((id) => id.startsWith('a__'))).toEqual([]);
    expect(harness.ctx.tools.has('b__echo')).toBe(true);
    await waitFor('server a to exit', () => !alive(pidA));
    const turn = await runTurn(harness, 'b__echo {"text":"still here"}');
    expect(results(turn.events).map((r) => text(r))).toEqual(['echo (http): still here']);
    expect(sessionsB()).toHaveLength(1);
    expect(heldConnections().filter((c) => c.name === 'a')).toEqual([]);
  });

  it('a server whose config changed is a new connection; the old one is closed', async () => {
    await harness.host.reload('mcp', { config: { servers: [{ ...b, timeoutMs: 30_000 }] } });
    expect(sessionsB()).toHaveLength(2);
    // The old generation is disposed just after the swap: then its connection goes.
    await waitFor('the old connection to close', () => heldConnections().filter((c) => c.name === 'b').length === 1);
    const turn = await runTurn(harness, 'b__echo {"text":"changed"}');
    expect(results(turn.events).map((r) => text(r))).toEqual(['echo (http): changed']);
    await harness.host.unload('mcp');
    expect(heldConnections().filter((c) => c.name === 'b')).toEqual([]);
    expect(harness.ctx.tools.has('b__echo')).toBe(false);
  });
});
