/**
 * No secret is written or printed (issue #16, items 2 and 8): a sentinel API key set in the
 * environment appears in no journal, no printed output and no request body across a session that
 * runs `env` (exec_command), fails with a 401 whose message echoes the key, and then succeeds —
 * through the real SDK against the fixture server.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerErrorBody, sseFrame, startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';
import { harness, journalOf, readEvents, sessionIdOf, tempDir, type Result } from './support.ts';

const KEY = 'sk-sentinel-7f3a9c21e4b84d0f';
const OTHER = 'tok-sentinel-other-55aa11';
const home = tempDir('secrets');
const workspace = tempDir('secrets-ws');
let server: FixtureServer;

beforeAll(async () => {
  server = await startFixtureServer();
});
afterAll(async () => {
  await server.close();
  home.cleanup();
  workspace.cleanup();
});

/** A chat-completions stream (DeepSeek speaks it) of one exec_command call, or of one text answer. */
function chatStream(delta: Record<string, unknown>, finish: string): string {
  const base = { id: 'chatcmpl-secrets', object: 'chat.completion.chunk', created: 1, model: 'deepseek-chat' };
  return (
    sseFrame({ ...base, choices: [{ index: 0, delta: { role: 'assistant', ...delta }, finish_reason: null }] }) +
    sseFrame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }) +
    'data: [DONE]\n\n'
  );
}

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? allFiles(path) : [path];
  });
}

describe('a sentinel key in the environment', { timeout: 120_000 }, () => {
  it('appears in no journal, no printed output and no request body (env run, key-echoing 401, success)', async () => {
    const env = { DEEPSEEK_API_KEY: KEY, DEEPSEEK_BASE_URL: server.openaiBaseURL, MY_SERVICE_TOKEN: OTHER };
    const args = ['--provider', 'deepseek', '--approve', 'allow-all', '--cwd', workspace.dir];
    const results: Result[] = [];

    // 1. The model runs `env`; the command's output goes into the journal and the next request.
    server.enqueue(
      { body: chatStream({ content: null, tool_calls: [{ index: 0, id: 'call_env', type: 'function', function: { name: 'exec_command', arguments: '{"command":"env"}' } }] }, 'tool_calls') },
      { body: chatStream({ content: 'I ran env.' }, 'stop') },
    );
    const first = await harness(['run', 'Show me the environment.', ...args], { home: home.dir, env });
    results.push(first);
    expect(first.code, first.stderr).toBe(0);
    const journal = journalOf(first.stdout);
    const toolResult = readEvents(journal).find((e) => e.type === 'tool/result')!;
    expect(JSON.stringify(toolResult.data)).toContain('PATH='); // env did run
    expect(server.requests).toHaveLength(2);

    // 2. A 401 whose message echoes the key (as some providers do).
    server.enqueue({ status: 401, json: providerErrorBody('openai', 401, `Incorrect API key provided: ${KEY}. You can find your API key at https://example.invalid.`) });
    const failed = await harness(['run', '--resume', sessionIdOf(journal), 'Again.', ...args], { home: home.dir, env });
    results.push(failed);
    expect(failed.code).not.toBe(0);
    expect(failed.stdout + failed.stderr).toContain('[redacted DEEPSEEK_API_KEY]');

    // 3. And a success.
    server.enqueue({ body: chatStream({ content: 'Fine now.' }, 'stop') });
    const ok = await harness(['run', '--resume', sessionIdOf(journal), 'Once more.', ...args], { home: home.dir, env });
    results.push(ok);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('Fine now.');

    for (const secret of [KEY, OTHER]) {
      for (const result of results) {
        expect(result.stdout).not.toContain(secret);
        expect(result.stderr).not.toContain(secret);
      }
      for (const file of allFiles(home.dir)) expect(readFileSync(file, 'utf8'), file).not.toContain(secret);
      for (const request of server.requests) expect(JSON.stringify(request.body)).not.toContain(secret);
    }
    // The key did go where it belongs: the Authorization header.
    expect(server.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);
  });
});
