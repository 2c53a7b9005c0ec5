/**
 * Chat slash commands (issue 17, 1), with piped input (each line is what a user types): `/model`
 * switches the model and the next request carries it (journaled as a change of the call), an unknown
 * `/word` is an error listing the commands and is never sent to the model, `/approve`, `/cost`,
 * `/tools` and `/help` answer without a turn.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journals, projectRoot, readEvents, tempDir, writeProject } from './support.ts';

const project = tempDir('slash');
afterAll(() => project.cleanup());

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'first' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }, { name: 'token-meter', config: { prices: { scripted: { '*': { inputTokens: 0, outputTokens: 0 } } } } }],
  scripts: { first: { replies: [{ reply: { text: 'Answer of the first model.' } }] }, second: { replies: [{ reply: { text: 'Answer of the second model.' } }] } },
});
const demo = join(projectRoot, 'cookbook/demo-workspace');

describe('chat slash commands', { timeout: 120_000 }, () => {
  it('/model switches the next request; an unknown /word is an error, not a prompt; /approve, /cost, /tools, /help answer', async () => {
    const home = join(project.dir, 'home');
    const input = ['Hello.', '/nope what', '/model scripted/second', 'Again.', '/approve allow-all', '/approve maybe', '/cost', '/tools', '/help', '/model no-such-model', '/exit'].join('\n');
    const result = await harness(['chat', '--config', config, '--cwd', demo], { home, input: `${input}\n` });
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toContain('Answer of the first model.');
    expect(out).toContain('error UNKNOWN_COMMAND: /nope is not a chat command (nothing was sent to the model). Commands: /help /model /approve /cost /tools /sessions /session /exit.');
    expect(out).toContain('model scripted/second — the next request uses it');
    expect(out).toContain('Answer of the second model.');
    expect(out).toContain('approvals allow-all from now on');
    expect(out).toContain('error INVALID_ARGUMENTS: /approve takes a policy: allow-all, read-only, always-ask, deny-all (now: allow-all).');
    expect(out).toMatch(/tokens {2}this turn: .* · cost \$0\.00\n {8}session: {3}.* \(2 turns\)/);
    expect(out).toContain('  read_file (tools-workspace)');
    expect(out).toContain('/model [provider/]model');
    expect(out).toMatch(/error UNKNOWN_MODEL: /);
    // Two prompts reached the model, each through the model of its time; the switch is journaled.
    const events = readEvents(join(home, 'sessions', journals(home)[0]!));
    expect(events.filter((e) => e.type === 'user/message').map((e) => e.data.message.content[0].text)).toEqual(['Hello.', 'Again.']);
    expect(events.filter((e) => e.type === 'request/header').map((e) => [e.data.header.config.model, e.data.reason])).toEqual([
      ['first', 'initial'],
      ['second', 'change'],
    ]);
  });
});
