/**
 * The mcp plugin against real MCP servers (built with the official SDK's `McpServer`): one over
 * stdio that the plugin spawns, one over Streamable HTTP on 127.0.0.1 that the test starts. A turn on
 * the scripted model calls their tools through approval and the central close-out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import approvals from '../../plugins/approvals/index.ts';
import mcp, { harnessToolName, heldConnections } from '../../plugins/mcp/index.ts';
import { join } from 'node:path';
import { type AnySessionEvent, type ApprovalRequest, type Diagnostic, definePlugin, type SessionEvent, type ToolSpec } from '../../runtime/index.ts';
import { createTestHarness, runTurn, type TestHarness } from '../../testing/index.ts';
import { PIXEL_PNG_BASE64 } from './servers/demo-server.ts';
import { type HttpServer, startHttpServer, stateLines, stdioServer, tempDir, waitFor } from './support.ts';

const results = (events: readonly AnySessionEvent[]) => events.filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result').map((e) => e.data);
const resultText = (result: SessionEvent<'tool/result'>['data']) =>
  result.message.content.flatMap((block) => (block.type === 'tool-result' ? block.content.map((part) => (part.type === 'text' ? part.text : `<${part.type}>`)) : [])).join('');

describe('mcp: tools of real servers over stdio and Streamable HTTP', { timeout: 60_000 }, () => {
  const temp = tempDir();
  const state = temp.file('stdio-state.txt');
  const token = 'test-token-not-a-secret';
  let http: HttpServer;
  let harness: TestHarness;
  let offered: readonly ToolSpec[] = [];

  beforeAll(async () => {
    http = await startHttpServer({ env: { MCP_REQUIRE_TOKEN: token } });
    harness = await createTestHarness({
      script: (context) => {
        offered = context.tools;
        if (context.step > 1) return { text: `done: ${context.toolResults.map((r) => r.text).join(' | ')}` };
        if (context.prompt === 'both') {
          return {
            toolCalls: [
              { name: 'local__echo', arguments: { text: 'over stdio' } },
              { name: 'remote__echo', arguments: { text: 'over http' } },
              { name: 'local__add_note', arguments: { note: 'hello' } },
            ],
          };
        }
        if (context.prompt === 'media') return { toolCalls: [{ name: 'local__media' }, { name: 'remote__fail' }] };
        if (context.prompt === 'progress') return { toolCalls: [{ name: 'remote__progress', arguments: { steps: 3 } }] };
        if (context.prompt === 'bad arguments') return { toolCalls: [{ name: 'remote__echo', arguments: { text: 42 } }] };
        return { text: 'no tools' };
      },
      plugins: [
        { plugin: approvals },
        {
          plugin: mcp,
          config: {
            servers: [stdioServer('local', state), { name: 'remote', transport: 'http', url: http.url, headers: { authorization: `Bearer ${token}` }, toolPermissions: { echo: 'write' } }],
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await harness?.dispose();
    await http?.stop();
    temp.remove();
  });

  it('registers each server tool as <server>__<tool>, its JSON Schema unchanged, permission from readOnlyHint or the config', () => {
    const names = harness.ctx.tools.ids();
    for (const tool of ['echo', 'add_note', 'slow', 'freeze', 'enable_extra', 'media', 'fail']) {
      expect(names).toContain(`local__${tool}`);
      expect(names).toContain(`remote__${tool}`);
    }
    expect(names).not.toContain('local__extra');
    // The schema the model sees is the one the server listed, as it listed it.
    const listed = heldConnections()
      .find((c) => c.name === 'local' && c.state === 'ready')!
      .tools.find((t) => t.name === 'echo')!;
    const spec = harness.ctx.tools.specs().find((s) => s.name === 'local__echo')!;
    expect(spec.inputSchema).toEqual(listed.inputSchema);
    expect(spec.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string', description: 'what to echo' } }, required: ['text'] });
    expect(spec.description).toBe('Echoes the text back.');
    expect(harness.ctx.tools.get('local__echo')!.permission).toBe('read'); // readOnlyHint: true
    expect(harness.ctx.tools.get('local__add_note')!.permission).toBe('write'); // readOnlyHint: false
    expect(harness.ctx.tools.get('remote__echo')!.permission).toBe('write'); // toolPermissions wins
    expect(harness.ctx.tools.get('remote__slow')!.permission).toBe('read');
  });

  it('a turn calls a tool of each server; each call is approved once, by the read-only policy or the person asked', async () => {
    const asked: ApprovalRequest[] = [];
    const approve = harness.ctx.approvals!.create('read-only', {
      ask: (request) => {
        asked.push(request);
        return true;
      },
    });
    const turn = await runTurn(harness, 'both', { approve });
    expect(turn.end.reason).toBe('completed');
    expect(offered.map((t) => t.name)).toContain('remote__echo');
    const decided = turn.events.filter((e): e is SessionEvent<'approval/decided'> => e.type === 'approval/decided').map((e) => e.data.decidedBy);
    expect(decided).toEqual(['policy:read-only', 'user', 'user']);
    expect(asked.map((r) => [r.name, r.permission, r.arguments])).toEqual([
      ['remote__echo', 'write', '{"text":"over http"}'],
      ['local__add_note', 'write', '{"note":"hello"}'],
    ]);
    expect(results(turn.events).map((r) => [resultText(r), r.message.content[0]!.type === 'tool-result' && r.message.content[0]!.isError])).toEqual([
      ['echo (stdio): over stdio', false],
      ['echo (http): over http', false],
      ['noted: hello', false],
    ]);
    expect(stateLines(state)).toContain('note hello');
    expect(turn.text).toBe('done: echo (stdio): over stdio | echo (http): over http | noted: hello');
  });

  it('a denied call never reaches the server', async () => {
    const before = stateLines(state).length;
    const turn = await runTurn(harness, 'both', { approve: harness.ctx.approvals!.create('deny-all') });
    expect(results(turn.events).map((r) => r.code)).toEqual(['DENIED', 'DENIED', 'DENIED']);
    expect(stateLines(state).length).toBe(before);
  });

  it('text, image and resource results become content blocks; the server’s isError is the tool’s own failure', async () => {
    const turn = await runTurn(harness, 'media');
    const [media, fail] = results(turn.events);
    const block = media!.message.content[0]!;
    expect(block.type === 'tool-result' && block.content).toEqual([
      { type: 'text', text: 'a picture:' },
      { type: 'image', mediaType: 'image/png', data: PIXEL_PNG_BASE64 },
      { type: 'text', text: '[resource file:///notes/readme.txt (text/plain)]\nresource body' },
      { type: 'text', text: '[resource link: other.txt file:///notes/other.txt]' },
    ]);
    expect(media!.code).toBeUndefined();
    expect(fail!.code).toBe('TOOL_REPORTED_ERROR');
    expect(resultText(fail!)).toBe('it went wrong');
  });

  it('progress the server reports is the call’s live output; the result is what it returns', async () => {
    const turn = await runTurn(harness, 'progress');
    const output = turn.events.filter((e): e is SessionEvent<'tool/output'> => e.type === 'tool/output').map((e) => e.data.text);
    expect(output).toEqual(['[progress 1/3] step 1\n', '[progress 2/3] step 2\n', '[progress 3/3] step 3\n']);
    expect(results(turn.events).map((r) => [r.code, resultText(r)])).toEqual([[undefined, 'done in 3 steps']]);
  });

  it('arguments the server refuses come back as a failed result, and the server keeps serving', async () => {
    const turn = await runTurn(harness, 'bad arguments');
    const [result] = results(turn.events);
    const block = result!.message.content[0]!;
    expect(block.type === 'tool-result' && block.isError).toBe(true);
    expect(result!.code).toBe('TOOL_REPORTED_ERROR');
    expect(resultText(result!)).toMatch(/Invalid arguments for tool echo: .*expected string, received number at text/);
    const again = await runTurn(harness, 'both');
    expect(results(again.events).every((r) => r.code === undefined)).toBe(true);
  });
});

describe('mcp: config and names', () => {
  it('two servers with one name, a bad name or a missing command are INVALID_CONFIG naming the path', async () => {
    const load = (servers: unknown[]) => createTestHarness({ script: [{ text: 'x' }], plugins: [{ plugin: mcp, config: { servers } }] });
    await expect(
      load([
        { name: 'a', transport: 'http', url: 'http://127.0.0.1:1/mcp' },
        { name: 'a', transport: 'http', url: 'http://127.0.0.1:2/mcp' },
      ]),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/servers\.1\.name.*two servers are named "a"/s) });
    await expect(load([{ name: 'has space', transport: 'http', url: 'http://127.0.0.1:1/mcp' }])).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/servers\.0\.name/) });
    await expect(load([{ name: 'a', transport: 'stdio' }])).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/servers\.0\.command/) });
    await expect(load([{ name: 'a', transport: 'ws', url: 'ws://x' }])).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });

  it('a server that cannot start is reported at load without holding it up; the others serve; it is retried', async () => {
    const diagnostics: Diagnostic[] = [];
    const listen = definePlugin({ name: 'listen', setup: (ctx) => void ctx.on('kernel/diagnostic', (d) => void diagnostics.push(d)) });
    const temp = tempDir();
    const startedAtMs = Date.now();
    const harness = await createTestHarness({
      script: [{ text: 'x' }],
      plugins: [
        { plugin: listen },
        {
          plugin: mcp,
          config: {
            servers: [
              { name: 'missing', transport: 'stdio', command: join(temp.dir, 'no-such-server'), connectTimeoutMs: 60_000 },
              { name: 'nobody', transport: 'http', url: 'http://127.0.0.1:9/mcp', connectTimeoutMs: 60_000 },
              stdioServer('fine', temp.file('state.txt')),
            ],
            restart: { initialDelayMs: 50, maxDelayMs: 200 },
          },
        },
      ],
    });
    try {
      // Each start attempt failed at once: the load did not wait out the 60 s connect timeouts.
      expect(Date.now() - startedAtMs).toBeLessThan(30_000);
      expect(harness.ctx.tools.has('fine__echo')).toBe(true);
      expect(harness.ctx.tools.ids().filter((id) => id.startsWith('missing__') || id.startsWith('nobody__'))).toEqual([]);
      const unavailable = diagnostics
        .filter((d) => d.code === 'MCP_SERVER_UNAVAILABLE')
        .map((d) => d.message)
        .sort();
      expect(unavailable).toEqual([
        expect.stringMatching(/^MCP server "missing" is not up \(it did not start: .*ENOENT/),
        expect.stringMatching(/^MCP server "nobody" is not up \(it did not start: .*fetch failed/),
      ]);
      // Retried with backoff: more failed attempts follow, as information.
      await waitFor('a retry', () => diagnostics.some((d) => d.code === 'MCP_SERVER_LOST' && d.level === 'info' && /"missing": restart 1 failed/.test(d.message)));
    } finally {
      await harness.dispose();
      temp.remove();
    }
  });

  it('tool names keep within what providers accept (64 of [a-zA-Z0-9_-]) and stay apart', () => {
    expect(harnessToolName('files', 'read')).toBe('files__read');
    const dotted = harnessToolName('files', 'read.file');
    expect(dotted).toMatch(/^files__read_file_[0-9a-f]{8}$/);
    expect(dotted).not.toBe(harnessToolName('files', 'read_file'));
    const long = harnessToolName('server', 'x'.repeat(80));
    expect(long).toMatch(/^[a-zA-Z0-9_-]{64}$/);
    expect(long).not.toBe(harnessToolName('server', `${'x'.repeat(79)}y`));
  });
});
