/**
 * Output piped into a slow reader arrives whole (issue 23): writes to a pipe are asynchronous in
 * Node, so an exit right after a command would drop what the reader has not taken yet. The sharpest
 * case is output a little over the pipe's buffer (64 KiB on Linux): what is left queued is then under
 * the stream's high-water mark, so no 'drain' is awaited — hence the "pipeful" sizes next to the
 * 1 MB ones. Covered: replay --json, the transcript, sessions --json, run --json. A reader that
 * went away (`| head -1`) still ends the command at once with 0; a stop (SIGTERM) while a reader
 * never reads exits 143 after a bounded flush.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, harness, journalOf, run, tempDir, writeProject } from './support.ts';

const project = tempDir('slow-reader');
afterAll(() => project.cleanup());

const home = join(project.dir, 'home');
const answer = (lineCount: number) => Array.from({ length: lineCount }, (_, i) => `line ${i} of a long answer, long enough to fill a pipe many times over.`).join('\n');
/** Answers (their chunks journaled one by one) for: a journal over 1 MB, a journal a little over a pipeful, a transcript a little over a pipeful. */
const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'huge' },
  plugins: [{ name: 'llm-scripted' }],
  scripts: {
    huge: { replies: [{ reply: { text: answer(4000) } }] },
    'journal-pipeful': { replies: [{ reply: { text: answer(70) } }] },
    'transcript-pipeful': { replies: [{ reply: { text: answer(920) } }] },
  },
});
const journal: Record<'huge' | 'journal-pipeful' | 'transcript-pipeful', string> = { huge: '', 'journal-pipeful': '', 'transcript-pipeful': '' };
/** A little over a pipe's buffer (64 KiB), by less than a stream's high-water mark (16 KiB). */
const PIPEFUL = { min: 66_000, max: 78_000 };

beforeAll(async () => {
  for (const model of Object.keys(journal) as (keyof typeof journal)[]) {
    const result = await harness(['run', 'Say a lot.', '--config', config, '--model', model], { home, timeoutMs: 120_000 });
    expect(result.code).toBe(0);
    journal[model] = journalOf(result.stdout);
  }
  expect(statSync(journal.huge).size).toBeGreaterThan(1_000_000);
  expect(statSync(journal['journal-pipeful']).size).toBeGreaterThan(PIPEFUL.min);
  expect(statSync(journal['journal-pipeful']).size).toBeLessThan(PIPEFUL.max);
}, 150_000);

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A reader that sleeps 1 s before reading on — once the first byte came, so that the harness's
 * start-up time (seconds on a loaded machine) is not what the reader sleeps through: `dd` takes
 * exactly that byte, then the reader sleeps, then `cat` reads the rest.
 */
const SLOW_READER = '(dd bs=1 count=1 2>/dev/null; sleep 1; cat)';

/** `HARNESS_HOME=home harness <args> | slow reader > out`: the output as the reader got it, and the harness's exit code. */
async function throughSlowReader(args: string, harnessHome = home): Promise<{ output: string; code: number }> {
  const out = join(project.dir, `out-${randomUUID()}`);
  const result = await run('bash', ['-c', `${q(process.execPath)} ${q(bin)} ${args} --config ${q(config)} | ${SLOW_READER} > ${q(out)}; echo "exit=\${PIPESTATUS[0]}"`], {
    env: cleanEnv({ HARNESS_HOME: harnessHome }),
    timeoutMs: 120_000,
  });
  expect(result.stderr).toBe('');
  return { output: readFileSync(out, 'utf8'), code: Number(/exit=(\d+)/.exec(result.stdout)?.[1]) };
}

const lines = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('a reader that is slow to start reading gets everything', { timeout: 120_000 }, () => {
  it.each(['huge', 'journal-pipeful'] as const)('replay --json of a %s journal yields exactly the journal (header and events)', async (which) => {
    const { output, code } = await throughSlowReader(`replay --json ${q(journal[which])}`);
    expect(code).toBe(0);
    expect(lines(output)).toEqual(lines(readFileSync(journal[which], 'utf8')));
  });

  it.each(['huge', 'journal-pipeful'] as const)('run --json of a %s turn yields exactly its journal', async (model) => {
    const { output, code } = await throughSlowReader(`run --json 'Say a lot.' --model ${model}`);
    expect(code).toBe(0);
    const printed = lines(output);
    const written = readFileSync(join(home, 'sessions', `${printed[0].id}.jsonl`), 'utf8');
    expect(printed).toEqual(lines(written));
    expect(printed.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } });
  });

  it.each(['huge', 'transcript-pipeful'] as const)('the transcript of a %s journal arrives whole: the same text as written to a file', async (which) => {
    const toFile = await harness(['replay', journal[which], '--config', config], { home });
    expect(toFile.code).toBe(0);
    if (which === 'transcript-pipeful') expect(toFile.stdout.length).toBeGreaterThan(PIPEFUL.min);
    if (which === 'transcript-pipeful') expect(toFile.stdout.length).toBeLessThan(PIPEFUL.max);
    const { output, code } = await throughSlowReader(`replay ${q(journal[which])}`);
    expect(code).toBe(0);
    expect(output).toBe(toFile.stdout);
    expect(output).toMatch(/\d+ events · 1 turn/);
  });

  it('sessions --json lists every one of many sessions', async () => {
    // Small sessions (a header and a title each): enough for a little over a pipeful of listing.
    const many = join(project.dir, 'many-home');
    mkdirSync(join(many, 'sessions'), { recursive: true });
    const ids = Array.from({ length: 205 }, () => randomUUID()); // ~350 bytes of summary each: a little over a pipeful
    for (const [i, id] of ids.entries()) {
      const header = { type: 'session', version: 1, id, createdAtMs: 1_700_000_000_000 + i, cwd: project.dir };
      const title = { seq: 1, type: 'session/title', atMs: 1_700_000_000_001 + i, data: { title: `session number ${String(i).padStart(3, '0')} with a title long enough to matter` } };
      writeFileSync(join(many, 'sessions', `${id}.jsonl`), `${JSON.stringify(header)}\n${JSON.stringify(title)}\n`);
    }
    const { output: text, code } = await throughSlowReader('sessions --json', many);
    expect(code).toBe(0);
    expect(text.length).toBeGreaterThan(PIPEFUL.min);
    expect(text.length).toBeLessThan(PIPEFUL.max);
    expect(
      lines(text)
        .map((s: { id: string }) => s.id)
        .sort(),
    ).toEqual([...ids].sort());
  });
});

describe('readers that stop reading', { timeout: 120_000 }, () => {
  it('replay --json | head -1 exits 0 at once, without a word', async () => {
    const started = Date.now();
    const result = await run('bash', ['-c', `${q(process.execPath)} ${q(bin)} replay --json ${q(journal.huge)} --config ${q(config)} | head -1; echo "exit=\${PIPESTATUS[0]}"`], {
      env: cleanEnv({ HARNESS_HOME: home }),
    });
    expect(result.stderr).toBe('');
    const [first, status] = result.stdout.trimEnd().split('\n');
    expect(JSON.parse(first!)).toMatchObject({ type: 'session' });
    expect(status).toBe('exit=0');
    // Generous for a loaded machine; a harness that waited for the (gone) reader would never end.
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('SIGTERM while the reader never reads: exits 143 after a bounded flush', async () => {
    const child = spawn(process.execPath, [bin, 'replay', '--json', journal.huge, '--config', config], { env: cleanEnv({ HARNESS_HOME: home }), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pause(); // a reader that never reads: the pipe fills, the rest stays queued in the harness
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    // Wait until the harness is writing (its signal handlers are in place by then: a loaded machine
    // can take seconds to get there), then a moment more for it to block on the full pipe.
    const startedAt = Date.now();
    while (child.stdout.readableLength === 0 && child.exitCode === null && Date.now() - startedAt < 60_000) await new Promise((r) => setTimeout(r, 50));
    expect(child.stdout.readableLength).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1000));
    expect(child.exitCode).toBeNull();
    const killedAt = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    // The flush after a stop is bounded (2 s); the bound here is generous for a loaded machine.
    expect(Date.now() - killedAt).toBeLessThan(15_000);
    expect(stderr).toBe('');
    child.stdout.destroy();
  });
});
