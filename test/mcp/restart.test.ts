/**
 * A server that crashes or hangs never wedges a turn: the call in flight gets a failed result, the
 * server is restarted with backoff, and the next call works — over stdio (the plugin respawns the
 * process) and over Streamable HTTP (the plugin reconnects with a new MCP session).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mcp from '../../plugins/mcp/index.ts';
import type { AnySessionEvent, Diagnostic, SessionEvent } from '../../runtime/index.ts';
import { createTestHarness, runTurn, type TestHarness } from '../../testing/index.ts';
import { alive, type HttpServer, startHttpServer, stateLines, stdioServer, tempDir, waitFor } from './support.ts';

const results = (events: readonly AnySessionEvent[]) => events.filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result').map((e) => e.data);
const text = (result: SessionEvent<'tool/result'>['data']) => result.message.content.flatMap((b) => (b.type === 'tool-result' ? b.content.map((p) => (p.type === 'text' ? p.text : '')) : [])).join('');

/** The scripted model calls the tool named in the prompt (`server__tool {json}`), then answers. */
const callFromPrompt = (context: { step: number; prompt: string; toolResults: readonly { text: string }[] }) => {
  if (context.step > 1) return { text: `result: ${context.toolResults.map((r) => r.text).join(' | ')}` };
  const [name, args] = [context.prompt.split(' ')[0]!, context.prompt.slice(context.prompt.indexOf(' ') + 1)];
  return { toolCalls: [{ name, arguments: args }] };
};

describe('mcp: a crashed or hung stdio server', { timeout: 90_000 }, () => {
  const temp = tempDir();
  const state = temp.file('state.txt');
  const frozenState = temp.file('frozen-state.txt');
  let harness: TestHarness;
  const diagnostics: Diagnostic[] = [];
  const started = (file = state) => stateLines(file).filter((line) => line.startsWith('started '));

  beforeAll(async () => {
    harness = await createTestHarness({
      script: callFromPrompt,
      plugins: [{ plugin: mcp, config: { servers: [stdioServer('demo', state), stdioServer('frozen', frozenState, { timeoutMs: 1_500 })], restart: { initialDelayMs: 100, pingTimeoutMs: 500 } } }],
    });
    harness.ctx.on('kernel/diagnostic', (d) => void diagnostics.push(d));
  });
  afterAll(async () => {
    await harness?.dispose();
    temp.remove();
  });

  it('killed mid-call: the call fails with MCP_SERVER_LOST, the turn completes, the server is restarted and the next call works', async () => {
    expect(started()).toHaveLength(1);
    const session = await harness.createSession();
    const startedAtMs = Date.now();
    const turn = runTurn(session, 'demo__slow {"ms":1000}', { approve: () => 'allow' });
    // The slow call is in the server: kill the process under it.
    await waitFor('the slow call to start', () => stateLines(state).some((line) => line.startsWith('slow-started ')));
    const pid = Number(
      stateLines(state)
        .find((line) => line.startsWith('slow-started '))!
        .split(' ')[1],
    );
    process.kill(pid, 'SIGKILL');
    const first = await turn;
    expect(first.end.reason).toBe('completed');
    const [lost] = results(first.events);
    expect(lost!.code).toBe('MCP_SERVER_LOST');
    expect(text(lost!)).toMatch(/MCP server "demo" went away during the call .*being restarted/);
    expect(Date.now() - startedAtMs).toBeLessThan(20_000);
    expect(diagnostics.some((d) => d.code === 'MCP_SERVER_LOST' && d.source === 'mcp')).toBe(true);

    // The next call, in the same session, runs on the restarted server (waiting for it if need be).
    const second = await runTurn(session, 'demo__echo {"text":"after the crash"}');
    expect(results(second.events).map((r) => [r.code, text(r)])).toEqual([[undefined, 'echo (stdio): after the crash']]);
    expect(started()).toHaveLength(2);
    expect(alive(pid)).toBe(false);
    await waitFor('the restart diagnostic', () => diagnostics.some((d) => d.code === 'MCP_SERVER_RESTARTED'));
  });

  it('a user abort mid-call answers ABORTED and cancels the call; the server is not restarted', async () => {
    const before = started().length;
    const session = await harness.createSession();
    const controller = new AbortController();
    const slowCount = () => stateLines(state).filter((line) => line.startsWith('slow-started ')).length;
    const slowBefore = slowCount();
    const turn = runTurn(session, 'demo__slow {"ms":30000}', { signal: controller.signal });
    await waitFor('the slow call to start', () => slowCount() > slowBefore);
    controller.abort();
    const first = await turn;
    expect(first.end.reason).toBe('aborted');
    expect(results(first.events)[0]!.code).toBe('ABORTED');
    const second = await runTurn(session, 'demo__echo {"text":"after the abort"}');
    expect(results(second.events).map((r) => [r.code, text(r)])).toEqual([[undefined, 'echo (stdio): after the abort']]);
    expect(started().length).toBe(before);
  });

  it('hung (its event loop blocked): the call times out by the close-out, a failed ping restarts the server, the next call works', async () => {
    const restartsBefore = diagnostics.filter((d) => d.code === 'MCP_SERVER_RESTARTED').length;
    const startedAtMs = Date.now();
    const first = await runTurn(harness, 'frozen__freeze {"ms":60000}');
    const [timedOut] = results(first.events);
    expect(timedOut!.code).toBe('TIMEOUT');
    expect(text(timedOut!)).toMatch(/timed out after 1500 ms/);
    expect(Date.now() - startedAtMs).toBeLessThan(20_000);
    const frozenPid = Number(
      stateLines(frozenState)
        .find((line) => line.startsWith('freeze-started '))!
        .split(' ')[1],
    );
    await waitFor('the hung server to be killed', () => !alive(frozenPid));
    expect(diagnostics.some((d) => d.code === 'MCP_SERVER_LOST' && /did not answer a ping within 500 ms/.test(d.message))).toBe(true);
    // The call budget (1.5 s) includes a wait for a restarting server: let the restart finish first.
    await waitFor('the restart', () => diagnostics.filter((d) => d.code === 'MCP_SERVER_RESTARTED').length > restartsBefore);
    const second = await runTurn(harness, 'frozen__echo {"text":"thawed"}');
    expect(results(second.events).map((r) => [r.code, text(r)])).toEqual([[undefined, 'echo (stdio): thawed']]);
    expect(started(frozenState)).toHaveLength(2);
  });

  it('a slow (not hung) call that times out leaves the server running: it still answers its ping', async () => {
    const before = started(frozenState).length;
    const first = await runTurn(harness, 'frozen__slow {"ms":4000}');
    expect(results(first.events)[0]!.code).toBe('TIMEOUT');
    const second = await runTurn(harness, 'frozen__echo {"text":"same process"}');
    expect(results(second.events)[0]!.code).toBeUndefined();
    expect(started(frozenState).length).toBe(before);
  });
});

describe('mcp: a Streamable HTTP server that goes away', { timeout: 90_000 }, () => {
  let http: HttpServer;
  let harness: TestHarness;

  beforeAll(async () => {
    http = await startHttpServer();
    harness = await createTestHarness({
      script: callFromPrompt,
      plugins: [{ plugin: mcp, config: { servers: [{ name: 'remote', transport: 'http', url: http.url, connectTimeoutMs: 15_000 }], restart: { initialDelayMs: 100, maxDelayMs: 500 } } }],
    });
  });
  afterAll(async () => {
    await harness?.dispose();
    await http?.stop();
  });

  it('killed mid-call: a failed result; once it is back on its port the plugin reconnects and the next call works', async () => {
    const session = await harness.createSession();
    const turn = runTurn(session, 'remote__slow {"ms":3000}');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const port = http.port;
    await http.stop();
    const first = await turn;
    expect(first.end.reason).toBe('completed');
    expect(results(first.events)[0]!.code).toBe('MCP_SERVER_LOST');
    http = await startHttpServer({ port });
    const second = await runTurn(session, 'remote__echo {"text":"back"}');
    expect(results(second.events).map((r) => [r.code, text(r)])).toEqual([[undefined, 'echo (http): back']]);
  });
});
