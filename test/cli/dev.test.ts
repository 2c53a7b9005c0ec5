/**
 * `harness dev`: editing the scripted adapter's file during a live session hot-reloads it — the next
 * reply comes from the new code, the session and its journal go on unbroken — and a syntax error in
 * an edit keeps the old generation serving, with a one-line report. Editing the config reloads what
 * changed (a plugin's new config, a plugin added, one removed); a config that does not load changes
 * nothing. Every reload, ok or failed, is a `plugin/reload` record that `harness replay` shows. A
 * reload notice never splits a streamed line (tmux). A plugin broken at start leaves dev running,
 * refusing prompts, until a saved fix loads it (`chat` fails at once).
 *
 * The adapter edited is a COPY of plugins/llm-scripted in a temporary project with its own config;
 * the repository's files are never touched.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, harness, journals, projectRoot, readEvents, tempDir } from './support.ts';
import { count, hasTmux, Terminal } from './terminal.ts';

const project = tempDir('dev');
let child: ChildProcessWithoutNullStreams | undefined;
let terminal: Terminal | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
  terminal?.close();
  project.cleanup();
});

/** `harness dev` on a project, its stdout and stderr collected; `waitFor` polls stdout. */
function startDev(config: string, home: string, cwd: string) {
  const dev = spawn(process.execPath, [bin, 'dev', '--config', config, '--cwd', join(projectRoot, 'cookbook/demo-workspace')], { env: cleanEnv({ HARNESS_HOME: home }), cwd });
  child = dev;
  const io = { out: '', err: '' };
  dev.stdout.setEncoding('utf8').on('data', (d: string) => (io.out += d));
  dev.stderr.setEncoding('utf8').on('data', (d: string) => (io.err += d));
  const exited = new Promise<number | null>((done) => dev.on('close', (code) => done(code)));
  const waitFor = async (test: (text: string) => boolean, what: string, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (test(io.out)) return io.out;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}; stdout:\n${io.out}\nstderr:\n${io.err}`);
  };
  return { dev, io, exited, waitFor };
}

/** A plugin of the project's own (`./plugins/notes/index.ts`): it registers nothing; `extra` is appended to its file. */
function writeNotesPlugin(dir: string, extra = ''): string {
  const file = join(dir, 'plugins/notes/index.ts');
  mkdirSync(join(dir, 'plugins/notes'), { recursive: true });
  writeFileSync(file, `import { definePlugin } from ${JSON.stringify(join(projectRoot, 'runtime/index.ts'))};\nexport default definePlugin({ name: 'notes', setup() {} });\n${extra}`);
  return file;
}

function writeProject(dir = project.dir, scriptedConfig: Record<string, unknown> = {}): { config: string; home: string; adapter: string } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const copy = join(dir, 'plugins/llm-scripted');
  cpSync(join(projectRoot, 'plugins/llm-scripted'), copy, { recursive: true });
  // The copy imports the runtime of this repository (one runtime per process).
  for (const name of readdirSync(copy)) {
    const file = join(copy, name);
    writeFileSync(file, readFileSync(file, 'utf8').replaceAll("'../../runtime/index.ts'", JSON.stringify(join(projectRoot, 'runtime/index.ts'))));
  }
  writeFileSync(
    join(dir, 'harness.config.ts'),
    `export default {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [
    { module: './plugins/llm-scripted/index.ts', config: ${JSON.stringify(scriptedConfig)} },
    { module: ${JSON.stringify(join(projectRoot, 'plugins/tools-workspace/index.ts'))} },
    { module: ${JSON.stringify(join(projectRoot, 'plugins/approvals/index.ts'))} },
  ],
};
`,
  );
  return { config: join(dir, 'harness.config.ts'), home: join(dir, 'home'), adapter: join(copy, 'adapter.ts') };
}

describe('harness dev', { timeout: 240_000 }, () => {
  it('hot-reloads an edited adapter in the live session; a syntax error keeps the old generation serving', async () => {
    const { config, home, adapter } = writeProject();
    const original = readFileSync(adapter, 'utf8');
    child = spawn(process.execPath, [bin, 'dev', '--config', config, '--cwd', join(projectRoot, 'cookbook/demo-workspace')], { env: cleanEnv({ HARNESS_HOME: home }), cwd: project.dir });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((done) => child!.on('close', (code) => done(code)));
    const waitFor = async (test: (text: string) => boolean, what: string, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        if (test(out)) return out;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`timed out waiting for ${what}; stdout:\n${out}\nstderr:\n${err}`);
    };

    await waitFor((o) => o.includes('watching 3 plugin folders (llm-scripted, tools-workspace, approvals)'), 'the watcher');
    child.stdin.write('What is in this workspace?\n');
    await waitFor((o) => o.includes('Here is what I found.') && /tokens {2}/.test(o), 'the first reply');

    // Save a change to the adapter: its text now streams in capitals.
    const edited = original.replace(
      'const reply: ScriptReply = script(context);',
      'const scripted = script(context);\n    const reply: ScriptReply = scripted.text ? { ...scripted, text: scripted.text.toUpperCase() } : scripted;',
    );
    expect(edited).not.toBe(original);
    writeFileSync(adapter, edited);
    await waitFor((o) => /↻ reloaded llm-scripted \(generation 2, [\d.]+ m?s\)/.test(o), 'the reload');
    child.stdin.write('And now?\n');
    await waitFor((o) => o.includes('HERE IS WHAT I FOUND.') && count(o, 'tokens  ') === 2, 'a reply from the new code');

    // A syntax error: one line says why, and generation 2 keeps serving.
    writeFileSync(adapter, `${edited}\nexport const broken = {{;\n`);
    const report = await waitFor((o) => o.includes('✗ reload of llm-scripted failed'), 'the failed reload');
    const line = report.split('\n').find((l) => l.includes('✗ reload of llm-scripted failed'))!;
    expect(line).toMatch(/^(› )?✗ reload of llm-scripted failed — PLUGIN_IMPORT_FAILED: .*adapter\.ts.* \(generation 2 still serving\)$/);
    // Where the syntax error is: the line appended last.
    expect(line).toContain(`${adapter}:${edited.split('\n').length + 1}:`);
    child.stdin.write('Still the new code?\n');
    await waitFor((o) => count(o, 'HERE IS WHAT I FOUND.') === 2 && count(o, 'tokens  ') === 3, 'a reply from generation 2');
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(err).toBe('');

    // One journal: three turns, contiguous, each completed; it verifies.
    const files = journals(home);
    expect(files).toHaveLength(1);
    const path = join(home, 'sessions', files[0]!);
    const events = readEvents(path);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'turn/start').map((e) => e.data.turn)).toEqual([1, 2, 3]);
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['completed', 'completed', 'completed']);
    const finalTexts = events.filter((e) => e.type === 'assistant/message' && e.data.step === 3).map((e) => e.data.message.content.find((b: { type: string }) => b.type === 'text').text as string);
    expect(finalTexts.map((text) => text.startsWith('Here is what I found.'))).toEqual([true, false, false]);
    expect(finalTexts.slice(1).every((text) => text.startsWith('HERE IS WHAT I FOUND.'))).toBe(true);
    // The config does not load now (its adapter has a syntax error): the journal is still read.
    const verify = await harness(['replay', path, '--verify', '--config', config], { home });
    expect(verify.stderr).toMatch(/^warning PLUGIN_IMPORT_FAILED: .* — reading without the config's plugins\n$/);
    expect(verify.code).toBe(0);
    // Both reloads are in the journal, between the turns, and the transcript shows them.
    const reloads = events.filter((e) => e.type === 'plugin/reload');
    expect(reloads.map((e) => [e.data.action, e.data.outcome, e.data.name, e.data.generation])).toEqual([
      ['reload', 'ok', 'llm-scripted', 2],
      ['reload', 'failed', 'llm-scripted', 2],
    ]);
    expect(reloads[1]!.data.failure.code).toBe('PLUGIN_IMPORT_FAILED');
    const replay = await harness(['replay', path, '--config', config], { home });
    expect(replay.code).toBe(0);
    const lineOf = (seq: number) => replay.stdout.split('\n').find((l) => l.trimStart().startsWith(`${seq} `));
    expect(lineOf(reloads[0]!.seq)).toMatch(/↻ reloaded llm-scripted \(generation 2, [\d.]+ m?s\)$/);
    expect(lineOf(reloads[1]!.seq)).toMatch(/✗ reload of llm-scripted failed — PLUGIN_IMPORT_FAILED: .* \(generation 2 still serving\)$/);
  });

  it('a reload notice that comes while a reply streams is printed on a line of its own, and the reply goes on', async () => {
    const { config, home, adapter } = writeProject(join(project.dir, 'paced'), { paceMs: 30, fragmentChars: 3 });
    const dev = spawn(process.execPath, [bin, 'dev', '--config', config, '--cwd', join(projectRoot, 'cookbook/demo-workspace')], {
      env: cleanEnv({ HARNESS_HOME: home }),
      cwd: join(project.dir, 'paced'),
    });
    child = dev;
    let out = '';
    dev.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((done) => dev.on('close', (code) => done(code)));
    const waitFor = async (test: (text: string) => boolean, what: string) => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        if (test(out)) return out;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`timed out waiting for ${what}; stdout:\n${out}`);
    };
    await waitFor((o) => o.includes('watching 3 plugin folders'), 'the watcher');
    dev.stdin.write('What is in this workspace?\n');
    await waitFor((o) => o.includes('Here is what I found. The workspace'), 'the final reply to start streaming');
    writeFileSync(adapter, `${readFileSync(adapter, 'utf8')}\n`); // a saved change: reload mid-reply
    await waitFor((o) => /tokens {2}/.test(o), 'the reply to finish');
    dev.stdin.end();
    expect(await exited).toBe(0);
    const lines = out.split('\n');
    const notice = lines.find((line) => line.includes('↻ reloaded llm-scripted'))!;
    expect(notice).toMatch(/^↻ reloaded llm-scripted \(generation 2, [\d.]+ m?s\) — the session goes on with the new code$/);
    // It came while the final reply streamed, and the reply around it is whole (only a line break added).
    expect(out.indexOf(notice)).toBeGreaterThan(out.indexOf('Here is what I found.'));
    expect(out.indexOf(notice)).toBeLessThan(out.indexOf('tokens  '));
    const path = join(home, 'sessions', readdirSync(join(home, 'sessions')).find((name) => name.endsWith('.jsonl'))!);
    const final = readEvents(path)
      .filter((e) => e.type === 'assistant/message')
      .at(-1)!
      .data.message.content.find((b: { type: string }) => b.type === 'text').text as string;
    const flat = (text: string) => text.replace(/\n/g, '');
    expect(flat(out.replace(notice, ''))).toContain(flat(final));
  });

  it('a saved config reloads what changed, journaled; a config that does not load changes nothing; replay shows every reload', async () => {
    const dir = join(project.dir, 'config-edit');
    const { config, home } = writeProject(dir);
    writeNotesPlugin(dir);
    writeFileSync(join(dir, 'reply.json'), JSON.stringify({ replies: [{ reply: { text: 'Answered by the new config.' } }] }));
    const original = readFileSync(config, 'utf8');
    const { dev, io, exited, waitFor } = startDev(config, home, dir);
    await waitFor((o) => o.includes(`and the config ${config}; a saved change reloads what changed`), 'the watcher');
    dev.stdin.write('What is in this workspace?\n');
    await waitFor((o) => o.includes('Here is what I found.') && count(o, 'tokens  ') === 1, 'the first reply');

    // One save: llm-scripted gets another config, approvals is removed, notes is added.
    const edited = original
      .replace('config: {} }', "config: { scripts: { 'scripted-default': './reply.json' } } }")
      .replace(/\n\s*\{ module: "[^"]*approvals\/index\.ts" \},/, "\n    { module: './plugins/notes/index.ts' },");
    expect(edited).toContain('reply.json');
    expect(edited).not.toContain('approvals');
    writeFileSync(config, edited);
    await waitFor((o) => o.includes('↻ loaded notes (generation 1)'), 'the config reload');
    expect(io.out).toMatch(/↻ reloaded llm-scripted \(generation 2, [\d.]+ m?s\) with its new config \(scripts\) — the session goes on with the new code/);
    expect(io.out).toContain('↻ unloaded approvals — it is no longer in the config');
    dev.stdin.write('And now?\n');
    await waitFor((o) => o.includes('Answered by the new config.') && count(o, 'tokens  ') === 2, 'a reply from the new config');

    // A config with a syntax error: the coded error with its file:line, and the old stack serves on.
    writeFileSync(config, `${edited}\nexport const broken = {{;\n`);
    const report = await waitFor((o) => o.includes('✗ the config'), 'the failed config reload');
    const line = report.split('\n').find((l) => l.includes('✗ the config'))!;
    expect(line).toMatch(/^(› )?✗ the config .* did not load — INVALID_CONFIG: .* \(nothing changed: the running plugins keep serving\)$/);
    expect(line).toContain(`(at ${config}:${edited.split('\n').length + 1}:`);
    dev.stdin.write('Still there?\n');
    await waitFor((o) => count(o, 'Answered by the new config.') === 2 && count(o, 'tokens  ') === 3, 'a reply from the old stack');
    writeFileSync(config, edited);
    await waitFor((o) => o.includes('↻ config saved: no plugin changed'), 'the fixed config');
    dev.stdin.end();
    expect(await exited).toBe(0);
    expect(io.err).toBe('');

    // The journal has each change where it happened, between the turns.
    const path = join(home, 'sessions', journals(home)[0]!);
    const events = readEvents(path);
    const reloads = events.filter((e) => e.type === 'plugin/reload');
    expect(reloads.map((e) => [e.data.action, e.data.outcome, e.data.name ?? null])).toEqual([
      ['unload', 'ok', 'approvals'],
      ['reload', 'ok', 'llm-scripted'],
      ['load', 'ok', 'notes'],
      ['config', 'failed', null],
    ]);
    expect(reloads[1]!.data.configKeys).toEqual(['scripts']);
    expect(reloads[3]!.data).toMatchObject({ configPath: config, failure: { code: 'INVALID_CONFIG' } });
    expect(reloads.every((e) => e.data.turn === undefined)).toBe(true);

    // `harness replay` shows them; --json prints them; --at, --verify read past them.
    const replay = await harness(['replay', path, '--config', config], { home });
    expect(replay.code).toBe(0);
    const shown = (seq: number) => replay.stdout.split('\n').find((l) => l.trimStart().startsWith(`${seq} `));
    expect(shown(reloads[0]!.seq)).toMatch(/↻ unloaded approvals \(generation 1\)$/);
    expect(shown(reloads[1]!.seq)).toMatch(/↻ reloaded llm-scripted \(generation 2, [\d.]+ m?s\) · config: scripts$/);
    expect(shown(reloads[2]!.seq)).toMatch(/↻ loaded notes \(generation 1\)$/);
    expect(shown(reloads[3]!.seq)).toContain(`✗ the config ${config} did not load — INVALID_CONFIG:`);
    const json = await harness(['replay', path, '--json', '--config', config], { home });
    const records = json.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l));
    expect(records.filter((r) => r.type === 'plugin/reload')).toEqual(reloads.map((e) => ({ ...e, ignorable: true })));
    const at = await harness(['replay', path, '--at', String(reloads[3]!.seq), '--config', config], { home });
    expect(at.code).toBe(0);
    expect(at.stdout).toContain(`at seq ${reloads[3]!.seq}`);
    const verify = await harness(['replay', path, '--verify', '--config', config], { home });
    expect(verify.stdout).toMatch(/^ok /);
    expect(verify.code).toBe(0);
  });

  it('a plugin broken at start leaves dev running: its coded error, prompts refused until a saved fix loads it; chat fails at once', async () => {
    const dir = join(project.dir, 'broken-at-start');
    const { config, home } = writeProject(dir);
    writeFileSync(config, readFileSync(config, 'utf8').replace('plugins: [', "plugins: [\n    { module: './plugins/notes/index.ts' },"));
    const notes = writeNotesPlugin(dir, 'export const broken = {{;\n');
    const brokenLine = readFileSync(notes, 'utf8').split('\n').length - 1;

    const chat = await harness(['chat', '--config', config, '--cwd', join(projectRoot, 'cookbook/demo-workspace')], { home, input: 'Hello\n' });
    expect(chat.code).toBe(1);
    expect(chat.stderr).toContain('error PLUGIN_IMPORT_FAILED:');

    const { dev, io, exited, waitFor } = startDev(config, home, dir);
    await waitFor((o) => o.includes('waiting for 1 plugin to load'), 'the watcher');
    // The plugin that did not load is named by its file (before: an empty name, "(llm-scripted, tools-workspace, approvals)" for 4 folders).
    expect(io.out).toContain('watching 4 plugin folders (llm-scripted, tools-workspace, approvals, notes/index.ts not loaded yet)');
    expect(io.err).toContain('error PLUGIN_IMPORT_FAILED: Could not import plugin module');
    expect(io.err).toContain(`(at ${notes}:${brokenLine}:`);
    expect(io.err).toContain(`hint: dev goes on without ${notes} and sends no prompt until it loads`);
    dev.stdin.write('What is in this workspace?\n');
    await waitFor((o) => o.includes('error PLUGIN_NOT_LOADED:'), 'the refused prompt');
    expect(io.out).toContain(`error PLUGIN_NOT_LOADED: The prompt was not sent: a plugin of the config is not loaded — ${notes} (PLUGIN_IMPORT_FAILED:`);
    expect(journals(home)).toEqual([]);

    writeNotesPlugin(dir);
    await waitFor((o) => o.includes('every plugin of the config is loaded: prompts are sent again'), 'the fixed plugin');
    expect(io.out).toContain('↻ loaded notes (generation 1)');
    dev.stdin.write('What is in this workspace?\n');
    await waitFor((o) => o.includes('Here is what I found.') && count(o, 'tokens  ') === 1, 'the reply');
    // Once loaded, it reloads like the others.
    writeNotesPlugin(dir, '// saved again\n');
    await waitFor((o) => /↻ reloaded notes \(generation 2, /.test(o), 'a reload of the fixed plugin');
    dev.stdin.end();
    expect(await exited).toBe(0);
    const events = readEvents(join(home, 'sessions', journals(home)[0]!));
    expect(events.filter((e) => e.type === 'plugin/reload').map((e) => [e.data.action, e.data.name, e.data.generation])).toEqual([['reload', 'notes', 2]]);
  });

  it.skipIf(!hasTmux && !process.env.CI)('in a terminal, a reload notice during a streamed reply waits for the end of the line: no word is split', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const dir = join(project.dir, 'tmux');
    const { config, home, adapter } = writeProject(dir, { paceMs: 40, fragmentChars: 3 });
    terminal = new Terminal(
      `cd '${dir}' && '${process.execPath}' '${bin}' dev --config '${config}' --cwd '${join(projectRoot, 'cookbook/demo-workspace')}'; echo "EXITED:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }),
    );
    const t = terminal;
    await t.waitFor((s) => s.includes('watching 3 plugin folders') && s.includes('› '), 'the watcher and the prompt');
    t.type('What is in this workspace?');
    await t.waitFor((s) => s.includes('Here is what I found. The'), 'the final reply to start streaming');
    writeFileSync(adapter, `${readFileSync(adapter, 'utf8')}\n`); // a saved change: the reload lands mid-line
    const screen = await t.waitFor((s) => /tokens {2}/.test(s), 'the reply to finish');
    const lines = screen.split('\n');
    const at = lines.findIndex((line) => line.includes('↻ reloaded llm-scripted'));
    expect(at).toBeGreaterThan(0);
    expect(lines[at]).toMatch(/^↻ reloaded llm-scripted \(generation 2, [\d.]+ m?s\) — the session goes on with the new code$/);
    const final = readEvents(join(home, 'sessions', journals(home)[0]!))
      .filter((e) => e.type === 'assistant/message')
      .at(-1)!
      .data.message.content.find((b: { type: string }) => b.type === 'text').text as string;
    // The line above the notice is a whole line of the reply, and without the notice the reply is on screen verbatim.
    expect(final.split('\n')).toContain(lines[at - 1]);
    expect([...lines.slice(0, at), ...lines.slice(at + 1)].join('\n')).toContain(final);
    t.keys('C-d');
    await t.waitFor((s) => s.includes('EXITED:0'), 'dev to quit');
  });
});
