/**
 * What the CLI refuses, and how it says so: a missing workspace, an empty prompt, conflicting flags,
 * a directory or a non-journal where a journal is expected, a data directory that is a file; error
 * codes with a `hint:` line in CLI words; a config's syntax error with its file:line:col; `--help`.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dshRoot, filesOf, harness, journalOf, projectRoot, readEvents, sessionIdOf, tempDir, writeProject } from './support.ts';

const project = tempDir('arguments');
afterAll(() => project.cleanup());

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
});
const home = join(project.dir, 'home');
const demo = join(projectRoot, 'cookbook/demo-workspace');
const opts = (extra: { env?: Record<string, string | undefined>; input?: string; cwd?: string } = {}) => ({ home, ...extra });
/** A finished session of `home`, made once. */
let journal: string;

beforeAll(async () => {
  const result = await harness(['run', 'What is in this workspace?', '--config', config, '--cwd', demo], opts());
  expect(result.code).toBe(0);
  journal = journalOf(result.stdout);
});

/** stderr as lines. */
const lines = (text: string) => text.trimEnd().split('\n');

describe('the workspace (--cwd)', { timeout: 120_000 }, () => {
  it('a missing or non-directory --cwd is one error before anything runs: no journal, no output', async () => {
    const fresh = join(project.dir, 'home-cwd');
    const missing = join(project.dir, 'no-such-dir');
    const file = join(project.dir, 'project/package.json');
    const results = await Promise.all([
      harness(['run', 'Hello', '--config', config, '--cwd', missing], { home: fresh }),
      harness(['run', 'Hello', '--config', config, '--cwd', file], { home: fresh }),
      harness(['chat', '--config', config, '--cwd', missing], { home: fresh, input: 'Hello\n' }),
      harness(['dev', '--config', config, '--cwd', missing], { home: fresh, input: 'Hello\n' }),
    ]);
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(lines(result.stderr)).toHaveLength(1);
    }
    expect(results[0]!.stderr).toBe(`error WORKSPACE_NOT_FOUND: --cwd ${missing} does not exist; give the directory the tools should work in.\n`);
    expect(results[1]!.stderr).toBe(`error WORKSPACE_NOT_FOUND: --cwd ${file} is not a directory; give the directory the tools should work in.\n`);
    expect(results[2]!.stderr).toMatch(/^error WORKSPACE_NOT_FOUND: /);
    expect(filesOf(join(fresh, 'sessions'))).toEqual([]);
  });

  it('resuming a session whose workspace is gone is refused (journal untouched) unless --cwd gives another', async () => {
    const gone = join(project.dir, 'gone-ws');
    cpSync(demo, gone, { recursive: true });
    const first = await harness(['run', 'What is in this workspace?', '--config', config, '--cwd', gone], opts());
    expect(first.code).toBe(0);
    const path = journalOf(first.stdout);
    rmSync(gone, { recursive: true, force: true });
    const before = readFileSync(path);
    const refused = await harness(['run', 'Again.', '--resume', path, '--config', config], opts());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`error WORKSPACE_NOT_FOUND: The session's workspace ${gone} does not exist any more; resume it in another directory with --cwd <dir>.\n`);
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(filesOf(join(home, 'sessions')).filter((name) => name.endsWith('.lock'))).toEqual([]);
    const elsewhere = await harness(['run', 'Again.', '--resume', path, '--config', config, '--cwd', demo], opts());
    expect(elsewhere.code).toBe(0);
    expect(
      readEvents(path)
        .filter((e) => e.type === 'turn/end')
        .map((e) => e.data.reason),
    ).toEqual(['completed', 'completed']);
  });
});

describe('prompts and sessions that would be empty', { timeout: 120_000 }, () => {
  it('run refuses an empty or blank prompt; chat quit before a prompt leaves no session', async () => {
    const fresh = join(project.dir, 'home-empty');
    const [empty, blank, eof, exit] = await Promise.all([
      harness(['run', '', '--config', config, '--cwd', demo], { home: fresh }),
      harness(['run', '  \t ', '--config', config, '--cwd', demo], { home: fresh }),
      harness(['chat', '--config', config, '--cwd', demo], { home: fresh, input: '' }),
      harness(['chat', '--config', config, '--cwd', demo], { home: fresh, input: '\n/exit\n' }),
    ]);
    for (const result of [empty, blank]) {
      expect(result.code).toBe(2); // a usage error
      expect(result.stderr).toBe('error EMPTY_PROMPT: The prompt is empty; say what the agent should do, e.g. harness run "What is in this workspace?".\n');
    }
    for (const result of [eof, exit]) {
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('new session (its journal starts with the first prompt)');
      expect(result.stdout).toContain('no prompt was sent: no session was created');
    }
    expect(filesOf(join(fresh, 'sessions'))).toEqual([]);
  });
});

describe('errors in CLI words', { timeout: 120_000 }, () => {
  it('JOURNAL_LOCKED, JOURNAL_EXISTS, JOURNAL_CORRUPT and FORK_INSIDE_TURN end with a hint naming the command or flag', async () => {
    const id = sessionIdOf(journal);
    const events = readEvents(journal);
    const inside = events.find((e) => e.type === 'tool/call')!.seq;
    const turnEnd = events.find((e) => e.type === 'turn/end')!.seq;
    // A live writer holds the lock (this test's own pid is alive).
    const lockedCopy = join(home, 'sessions', 'locked.jsonl');
    cpSync(journal, lockedCopy);
    writeFileSync(`${lockedCopy}.lock`, `${process.pid}\n`);
    const corrupt = join(project.dir, 'corrupt.jsonl');
    const text = readFileSync(journal, 'utf8').split('\n');
    text[5] = text[5]!.slice(0, 20);
    writeFileSync(corrupt, text.join('\n'));
    const [locked, exists, damaged, insideTurn] = await Promise.all([
      harness(['run', 'Again.', '--resume', 'locked', '--config', config], opts()),
      harness(['fork', id, '--at', String(turnEnd), '--id', id, '--config', config], opts()),
      harness(['replay', corrupt, '--config', config], opts()),
      harness(['fork', id, '--at', String(inside), '--config', config], opts()),
    ]);
    for (const result of [locked, exists, damaged, insideTurn]) {
      expect(result.code).toBe(1);
      expect(lines(result.stderr)).toHaveLength(2);
    }
    expect(lines(locked.stderr)[0]).toMatch(/^error JOURNAL_LOCKED: .*locked\.jsonl is open for writing by another process/);
    expect(lines(locked.stderr)[1]).toMatch(/^hint: another harness process is writing this session; `node \S+ --config \S+ replay locked` reads it meanwhile \(read-only\)/);
    expect(lines(exists.stderr)[0]).toMatch(/^error JOURNAL_EXISTS: /);
    expect(lines(exists.stderr)[1]).toBe('hint: give the new session another id with --id <id>.');
    expect(lines(damaged.stderr)[0]).toMatch(/^error JOURNAL_CORRUPT: .*corrupt\.jsonl:6: corrupt journal line/);
    expect(lines(damaged.stderr)[1]).toMatch(/^hint: `.* replay \S+corrupt\.jsonl --salvage` reads past the damaged line; `.* replay \S+corrupt\.jsonl --verify` lists all the damage\.$/);
    expect(lines(insideTurn.stderr)[0]).toMatch(/^error FORK_INSIDE_TURN: /);
    expect(lines(insideTurn.stderr)[1]).toBe('hint: add --close-turn to fork there anyway (the fork closes the open turn with synthetic events), or fork at a seq outside the turn.');
    rmSync(`${lockedCopy}.lock`);
    rmSync(lockedCopy);
    // Read with --salvage, the summary counts the events read and says how many lines were left out.
    const salvaged = await harness(['replay', corrupt, '--salvage', '--config', config], opts());
    expect(salvaged.code).toBe(0);
    const eventCount = text.filter((line) => line.trim() !== '').length - 2; // less the header and the damaged line
    expect(salvaged.stdout).toMatch(new RegExp(`^${eventCount} events \\(1 corrupt line skipped\\) · \\d+ turns? · `, 'm'));
    expect(lines(salvaged.stderr)).toEqual([expect.stringMatching(/^skipped line 6: /)]);
  });

  it('DUPLICATE_PLUGIN and INVALID_CONFIG name the config file actually used (--config or $HARNESS_CONFIG)', async () => {
    const dir = join(project.dir, 'configs');
    const duplicate = writeProject(dir, { plugins: [{ name: 'llm-scripted' }, { name: 'llm-scripted' }] }, 'twice.config.ts');
    const invalid = writeProject(dir, { plugins: [{ name: 'llm-scripted', config: { paceMs: -1 } }] }, 'other.config.ts');
    const [twice, bad, badFromEnv] = await Promise.all([
      harness(['run', 'Hello', '--config', duplicate, '--cwd', demo], opts()),
      harness(['run', 'Hello', '--config', invalid, '--cwd', demo], opts()),
      harness(['run', 'Hello', '--cwd', demo], opts({ env: { HARNESS_CONFIG: invalid } })),
    ]);
    expect(twice.code).toBe(1);
    expect(lines(twice.stderr)[0]).toMatch(/^error DUPLICATE_PLUGIN: Plugin "llm-scripted" is already loaded/);
    expect(lines(twice.stderr)[1]).toBe(`hint: the plugin is listed twice in the config ${duplicate}; remove one of its entries.`);
    for (const [result, from] of [
      [bad, 'from --config'],
      [badFromEnv, 'from $HARNESS_CONFIG'],
    ] as const) {
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^error INVALID_CONFIG: Plugin "llm-scripted" has an invalid config:\n {2}- paceMs: /);
      expect(result.stderr).not.toMatch(/harness\.config\.ts|the harness config/);
      expect(lines(result.stderr).at(-1)).toBe(`hint: the config is ${invalid} (${from}); --config <path> or $HARNESS_CONFIG picks another.`);
    }
  });

  it('a syntax error in the config is reported with its file:line:col and the line', async () => {
    const dir = join(project.dir, 'syntax');
    mkdirSync(dir, { recursive: true });
    const broken = join(dir, 'broken.config.ts');
    writeFileSync(broken, `const scripted: string = ${JSON.stringify(join(projectRoot, 'plugins/llm-scripted/index.ts'))};\nexport default {\n  plugins: [\n    { module: scripted },\n  }},\n};\n`);
    const [run, replay] = await Promise.all([harness(['run', 'Hello', '--config', broken, '--cwd', demo], opts()), harness(['replay', journal, '--config', broken], opts())]);
    expect(run.code).toBe(1);
    expect(lines(run.stderr).slice(0, 4)).toEqual([expect.stringMatching(/^error INVALID_CONFIG: Could not load config .*broken\.config\.ts: /), `  at ${broken}:5:3`, '  │   }},', '  │   ^']);
    // Commands that only read journals go on without the config, and say where it broke.
    expect(replay.code).toBe(0);
    expect(replay.stderr).toContain(`(at ${broken}:5:3) — reading without the config's plugins`);
  });

  it('a directory, or a data directory that is a file, is a coded error, not a crash', async () => {
    const file = join(project.dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    const [replayDir, importDir, sessionsHome, runHome, nestedHome] = await Promise.all([
      harness(['replay', join(project.dir, 'project'), '--config', config], opts()),
      harness(['import', 'dsh', join(dshRoot, 'acp-agent/fs-read'), '--config', config], opts()),
      harness(['sessions', '--config', config], { home: file }),
      harness(['run', 'Hello', '--config', config, '--cwd', demo], { home: file }),
      harness(['sessions', '--config', config], { home: join(file, 'below') }),
    ]);
    expect(lines(replayDir.stderr)[0]).toBe(`error NOT_A_JOURNAL_FILE: ${join(project.dir, 'project')} is a directory, not a journal file; give a session id or the path of a .jsonl journal.`);
    expect(lines(importDir.stderr)[0]).toBe(`error NOT_A_JOURNAL_FILE: ${join(dshRoot, 'acp-agent/fs-read')} is a directory; give the path of a DeepSeek Harness session file (its session.jsonl).`);
    for (const result of [sessionsHome, runHome, nestedHome]) {
      expect(result.code).toBe(1);
      expect(lines(result.stderr)[0]).toMatch(new RegExp(`^error DATA_DIR_INVALID: The data directory \\S+ \\(from \\$HARNESS_HOME\\) cannot hold journals: ${file} is a file, not a directory\\.$`));
    }
    for (const result of [replayDir, importDir]) expect(result.code).toBe(1);
  });
});

describe('a data directory that cannot be made', { timeout: 120_000 }, () => {
  // /proc refuses mkdir; Node's recursive mkdir spins forever there, which is why the journal makes
  // its directories one level at a time.
  it.runIf(process.platform === 'linux')('is DATA_DIR_INVALID with the system reason and a hint, promptly', async () => {
    const result = await harness(['run', 'Hello', '--config', config, '--cwd', demo, '--data-dir', '/proc/harness-no-such-dir'], opts());
    expect(result.code).toBe(1);
    expect(lines(result.stderr)[0]).toBe(
      "error DATA_DIR_INVALID: Cannot create the journal directory /proc/harness-no-such-dir/sessions (ENOENT: no such file or directory, mkdir '/proc/harness-no-such-dir'); point the data directory at a writable folder.",
    );
    expect(lines(result.stderr)[1]).toMatch(/^hint: point --data-dir/);
  });
});

describe('a failed turn after its journal exists', { timeout: 120_000 }, () => {
  it('names the journal and the resume command', async () => {
    const home = tempDir('failed-turn');
    try {
      // Nothing listens on port 9: a connection error (no retry plugin here), and the turn ends with TRANSPORT.
      const openaiConfig = writeProject(join(home.dir, 'project'), {
        plugins: [{ name: 'llm-openai', config: { providers: { openai: { baseURL: 'http://127.0.0.1:9/v1' } } } }, { name: 'tools-workspace' }, { name: 'approvals' }],
      });
      const result = await harness(['run', 'Hello', '--config', openaiConfig, '--cwd', demo, '--provider', 'openai', '--model', 'gpt-4o'], {
        home: home.dir,
        env: { OPENAI_API_KEY: 'test-key' },
      });
      expect(result.code).toBe(1);
      const errorLines = lines(result.stderr);
      expect(errorLines[0]).toBe('error TRANSPORT: Could not reach provider "openai" at http://127.0.0.1:9/v1: Connection error. (fetch failed)');
      const [journalFile] = filesOf(join(home.dir, 'sessions')).filter((f) => f.endsWith('.jsonl'));
      expect(errorLines[1]).toBe(`journal ${join(home.dir, 'sessions', journalFile!)}`);
      expect(errorLines[2]).toMatch(new RegExp(`^resume  .* run --resume ${journalFile!.replace('.jsonl', '')} "<prompt>"$`));
    } finally {
      home.cleanup();
    }
  });
});

describe('flags', { timeout: 120_000 }, () => {
  it("the parser's own errors are INVALID_ARGUMENTS with a --help hint; --at takes decimal digits only", async () => {
    const results = await Promise.all([
      harness(['frobnicate'], opts()),
      harness(['replay'], opts()),
      ...['', '0x10', '1e2', '-1', '99999999999999999999', ' 35', '35 ', '35abc', '3.5'].map((at) => harness(['replay', journal, '--at', at, '--config', config], opts())),
      ...[' 35', '35abc', '3.5', '-1', ''].map((at) => harness(['fork', journal, '--at', at], opts())),
    ]);
    const [unknown, missing, ...badSeqs] = results;
    expect(lines(unknown!.stderr)[0]).toBe("error INVALID_ARGUMENTS: unknown command 'frobnicate'");
    expect(lines(missing!.stderr)[0]).toBe("error INVALID_ARGUMENTS: missing required argument 'session'");
    for (const result of badSeqs) expect(lines(result.stderr)[0]).toMatch(/^error INVALID_ARGUMENTS: option '--at <seq>' argument '.*' is invalid\. expected a whole number ≥ 0 in decimal digits/);
    for (const result of results) {
      expect(result.code).toBe(2); // a usage error
      expect(lines(result.stderr)[1]).toMatch(/^hint: `.+ --help` \(or `.+ <command> --help`\) lists the commands, arguments and options\.$/);
    }
    const good = await harness(['replay', journal, '--at', '3', '--config', config], opts());
    expect(good.code).toBe(0);
  });

  it('replay refuses flags that do not go together', async () => {
    const results = await Promise.all([
      harness(['replay', journal, '--at', '3', '--verify', '--config', config], opts()),
      harness(['replay', journal, '--json', '--cassette', '--config', config], opts()),
      harness(['replay', journal, '--at', '3', '--salvage', '--config', config], opts()),
    ]);
    expect(results.map((r) => r.stderr)).toEqual([
      'error INVALID_ARGUMENTS: --verify cannot be combined with --at: --verify is an integrity check of the whole journal. Run them one at a time.\n',
      'error INVALID_ARGUMENTS: --cassette cannot be combined with --json: --cassette is an offline re-run that prints its own report. Run them one at a time.\n',
      'error INVALID_ARGUMENTS: --at cannot be combined with --salvage: --at is the state at one seq (with --json: as JSON). Run them one at a time.\n',
    ]);
    for (const result of results) {
      expect(result.code).toBe(2); // a usage error
      expect(result.stdout).toBe('');
    }
  });

  it("--help names $HARNESS_CONFIG, the config's dataDir and $HARNESS_HOME; fork --help names --close-turn", async () => {
    const [help, fork] = await Promise.all([harness(['--help'], opts()), harness(['fork', '--help'], opts())]);
    expect(help.stdout).toContain('$HARNESS_CONFIG');
    expect(help.stdout).toContain("the config's dataDir");
    expect(help.stdout).toContain('HARNESS_HOME');
    expect(help.stdout).toContain('exec_command runs a shell in the');
    expect(help.stdout).toContain('Exit codes: 0 done · 1 error · 2 usage (a bad command line) · 130 interrupted (Ctrl-C) ·\n  143 / 129 stopped by SIGTERM / SIGHUP');
    expect(fork.stdout).toMatch(/--close-turn\s+allow a seq inside a turn \(refused otherwise, FORK_INSIDE_TURN\)/);
  });

  it('an argument that names an existing file is read as a path (replay package.json)', async () => {
    const result = await harness(['replay', 'package.json', '--config', config], opts({ cwd: projectRoot }));
    expect(result.code).toBe(1);
    expect(lines(result.stderr)[0]).toMatch(new RegExp(`^error JOURNAL_HEADER: ${join(projectRoot, 'package.json')}:1: `));
  });
});
