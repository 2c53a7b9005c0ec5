/**
 * No message the CLI prints names an internal function or an option of the embedding API (the rule
 * in runtime/kernel/errors.ts): for each error a user can meet — a corrupt journal, a fork inside a
 * turn and of an open turn, a locked journal, a session that is not there, an id that is taken, an
 * event type no plugin registers, an invalid config, a plugin that is listed twice or does not
 * import — the output is scanned for the runtime's exported function and class names and for API
 * option literals (`{ salvage: true }`, `closeOpenTurn`). And every literal message of a
 * `new HarnessError(…)` / `new LlmError(…)` in runtime/, plugins/, cli/ and stack/ is held to the
 * same list of embedding-API names, so a message no scenario reaches cannot slip either.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as publicApi from '../../runtime/index.ts';
import * as internalApi from '../../runtime/internal.ts';
import { harness, journalOf, pluginModule, projectRoot, readEvents, sessionIdOf, tempDir, writeProject } from './support.ts';

/** What a config or a plugin author writes: naming these is a user's vocabulary, not the API's internals. */
const CONFIG_VOCABULARY = new Set(['defineConfig', 'definePlugin', 'defineTool']);

/** Names of functions and classes a message must not name: camelCase ones, and multi-word classes. */
function apiNames(module: Record<string, unknown>): string[] {
  return Object.keys(module).filter((name) => (/^[a-z]+[A-Z]/.test(name) || /^[A-Z][a-z]+[A-Z]/.test(name)) && !CONFIG_VOCABULARY.has(name));
}

/** Option literals of the embedding API (an object literal of a flag, `reload("x")`). */
const OPTION_PATTERNS = [/\bcloseOpenTurn\b/, /\bsalvage: true\b/, /\bignorable: true\b/, /\breload\("/, /\{ ?\w+: (?:true|false) ?\}/];

/** The internal names in `text`: exported runtime functions and classes, and API option literals. */
function internalNamesIn(text: string, names: readonly string[]): string[] {
  const found = names.filter((name) => new RegExp(`\\b${name}\\b`).test(text));
  for (const pattern of OPTION_PATTERNS) {
    const match = pattern.exec(text);
    if (match) found.push(match[0]);
  }
  return found;
}

const RUNTIME_NAMES = [...new Set([...apiNames(publicApi), ...apiNames(internalApi)])];

describe('the scan itself', () => {
  it("catches the old messages' API names and passes CLI words", () => {
    for (const old of [
      'The file was left as it is; read it with { salvage: true } to skip the line.',
      'Fork at seq 2 (before that turn) or at the seq of its turn/end, or pass { closeOpenTurn: true } to close it with synthetic events in the fork.',
      'A journal already exists at x.jsonl; open it with openJournal, or pick another session id.',
      'wait for it to close, or open the session read-only with openSession.',
      'Load the plugin that registers it (registerEventType), or append it with { ignorable: true }.',
      'Plugin "approvals" is already loaded; unload it first or use reload("approvals").',
      'forkSession needs atSeq ≥ 0 (an integer); got -1.',
    ]) {
      expect(internalNamesIn(old, RUNTIME_NAMES), old).not.toEqual([]);
    }
    expect(internalNamesIn('hint: `harness replay x --salvage` reads past the damaged line; add --close-turn, or set maxSteps in defineConfig({ plugins }).', RUNTIME_NAMES)).toEqual([]);
  });
});

const project = tempDir('messages');
afterAll(() => project.cleanup());
const home = join(project.dir, 'home');
const sessions = join(home, 'sessions');
const demo = join(projectRoot, 'cookbook/demo-workspace');
const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
});
const opts = { home };
/** A finished session of `home`. */
let journal: string;

beforeAll(async () => {
  const result = await harness(['run', 'What is in this workspace?', '--config', config, '--cwd', demo], opts);
  expect(result.code).toBe(0);
  journal = journalOf(result.stdout);
}, 120_000);

/** A config file in its own folder (an ES module package). */
function configFile(name: string, text: string): string {
  const dir = join(project.dir, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(dir, 'harness.config.ts'), text);
  return join(dir, 'harness.config.ts');
}

describe('what the CLI prints for errors names no API internals', { timeout: 180_000 }, () => {
  it('journal errors: corrupt, fork inside a turn, fork of an open turn, locked, not found, id taken, unknown event type', async () => {
    const id = sessionIdOf(journal);
    const lines = readFileSync(journal, 'utf8').split('\n');
    const events = readEvents(journal);
    const inside = events.find((e) => e.type === 'tool/call')!.seq;
    const turnEnd = events.find((e) => e.type === 'turn/end')!.seq;
    // A line cut short in the middle of the journal.
    const corrupt = join(project.dir, 'corrupt.jsonl');
    writeFileSync(corrupt, lines.map((line, index) => (index === 5 ? line.slice(0, 20) : line)).join('\n'));
    // A session whose last turn never ended (the process died after the tool call).
    writeFileSync(join(sessions, 'open-turn.jsonl'), `${lines.slice(0, inside + 1).join('\n')}\n`);
    // A live writer holds the lock (this test's own pid is alive).
    cpSync(journal, join(sessions, 'locked.jsonl'));
    writeFileSync(join(sessions, 'locked.jsonl.lock'), `${process.pid}\n`);
    // An event of a plugin this config does not load, not marked ignorable.
    writeFileSync(join(sessions, 'foreign.jsonl'), `${readFileSync(journal, 'utf8')}${JSON.stringify({ seq: events.length + 1, type: 'acme/pin', atMs: Date.now(), data: {} })}\n`);
    const cases = [
      { code: 'JOURNAL_CORRUPT', args: ['replay', corrupt] },
      { code: 'FORK_INSIDE_TURN', args: ['fork', id, '--at', String(inside)] },
      { code: 'FORK_INSIDE_TURN', args: ['fork', 'open-turn', '--at', String(inside)] },
      { code: 'JOURNAL_LOCKED', args: ['run', 'Again.', '--resume', 'locked'] },
      { code: 'JOURNAL_NOT_FOUND', args: ['replay', '0000dead'] },
      { code: 'JOURNAL_EXISTS', args: ['fork', id, '--at', String(turnEnd), '--id', id] },
      { code: 'JOURNAL_EXISTS', args: ['import', 'harness', journal] },
      { code: 'UNKNOWN_EVENT_TYPE', args: ['run', 'Again.', '--resume', 'foreign'] },
    ];
    const results = await Promise.all(cases.map(({ args }) => harness([...args, '--config', config], opts)));
    cases.forEach(({ code, args }, index) => {
      const result = results[index]!;
      const what = `${args.join(' ')} → ${result.stderr}`;
      expect(result.code, what).toBe(1);
      expect(result.stderr, what).toMatch(new RegExp(`^error ${code}: `));
      expect(result.stderr, what).toMatch(/\nhint: /);
      expect(internalNamesIn(result.stdout + result.stderr, RUNTIME_NAMES), what).toEqual([]);
    });
    const [damaged, , openTurn, , , , , foreign] = results;
    expect(damaged!.stderr).toContain('The file was left as it is; a salvage read skips the line.\nhint: ');
    expect(damaged!.stderr).toMatch(/ replay \S+corrupt\.jsonl --salvage` reads past the damaged line/);
    expect(openTurn!.stderr).toContain('(before it; the turn has no end yet)');
    expect(foreign!.stderr).toMatch(/Unknown event type "acme\/pin" .*add it to the config's plugins/);
    expect(foreign!.stderr).toMatch(/\nhint: the session holds events of a plugin that the config \S+ does not load; `.* replay foreign` reads it without that plugin\.\n$/);
  });

  it('config errors: an unknown key, a plugin listed twice, a plugin module missing or broken', async () => {
    const scripted = JSON.stringify(pluginModule('llm-scripted'));
    const broken = join(project.dir, 'broken-plugin.ts');
    writeFileSync(broken, "import { definePlugin } from 'harness-runtime';\nexport default definePlugin({ name: 'broken', setup( {\n");
    const cases = [
      { code: 'INVALID_CONFIG', config: configFile('typo', `export default {\n  plugns: [{ module: ${scripted} }],\n};\n`) },
      { code: 'INVALID_CONFIG', config: configFile('plugin-typo', `export default { plugins: [{ module: ${scripted}, config: { paceMS: 1 } }] };\n`) },
      { code: 'DUPLICATE_PLUGIN', config: configFile('twice', `export default { plugins: [{ module: ${scripted} }, { module: ${scripted} }] };\n`) },
      { code: 'PLUGIN_IMPORT_FAILED', config: configFile('missing', "export default { plugins: [{ module: './no-such-plugin.ts' }] };\n") },
      { code: 'PLUGIN_IMPORT_FAILED', config: configFile('broken', `export default { plugins: [{ module: ${JSON.stringify(broken)} }] };\n`) },
    ];
    const results = await Promise.all(cases.map((entry) => harness(['run', 'Hello', '--config', entry.config, '--cwd', demo], opts)));
    cases.forEach(({ code, config: path }, index) => {
      const result = results[index]!;
      const what = `${relative(project.dir, path)} → ${result.stderr}`;
      expect(result.code, what).toBe(1);
      expect(result.stderr, what).toMatch(new RegExp(`^error ${code}: `));
      expect(internalNamesIn(result.stdout + result.stderr, RUNTIME_NAMES), what).toEqual([]);
    });
    expect(results[2]!.stderr).toMatch(/^error DUPLICATE_PLUGIN: Plugin "llm-scripted" is already loaded: a plugin is loaded once, so list it once in the config's plugins/);
  });
});

describe('the messages in the source', () => {
  /** Embedding-API names: everything the runtime exports from its session layer and harness.ts, and everything internal. */
  function embeddingApiNames(): string[] {
    const index = ts.createSourceFile('index.ts', readFileSync(join(projectRoot, 'runtime/index.ts'), 'utf8'), ts.ScriptTarget.Latest);
    const names = new Set(apiNames(internalApi));
    for (const statement of index.statements) {
      if (!ts.isExportDeclaration(statement) || statement.isTypeOnly || !statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      if (!/^\.\/(session\/|harness\.ts$)/.test(statement.moduleSpecifier.text)) continue;
      const clause = statement.exportClause;
      if (clause && ts.isNamedExports(clause)) for (const element of clause.elements) if (!element.isTypeOnly) names.add(element.name.text);
    }
    return [...names].filter((name) => !CONFIG_VOCABULARY.has(name) && !/^[A-Z0-9_]+$/.test(name));
  }

  /** The literal text of each error message argument (`new HarnessError(code, message)`, `new LlmError(…)`, `llmFailure(code, message)`). */
  function messages(): { where: string; text: string }[] {
    const found: { where: string; text: string }[] = [];
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : walk(path);
        return path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts') ? [path] : [];
      });
    for (const file of ['runtime', 'plugins', 'cli', 'stack'].flatMap((folder) => walk(join(projectRoot, folder)))) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const literalText = (node: ts.Node): string => {
        if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
        if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((span) => `${literalText(span.expression)}${span.literal.text}`)].join('');
        if (ts.isConditionalExpression(node)) return `${literalText(node.whenTrue)} ${literalText(node.whenFalse)}`;
        if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) return `${literalText(node.left)}${literalText(node.right)}`;
        if (ts.isParenthesizedExpression(node)) return literalText(node.expression);
        return ' ';
      };
      const visit = (node: ts.Node): void => {
        const isError = ts.isNewExpression(node) && ts.isIdentifier(node.expression) && (node.expression.text === 'HarnessError' || node.expression.text === 'LlmError');
        const isFailure = ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'llmFailure';
        const message = (isError || isFailure) && (node as ts.NewExpression | ts.CallExpression).arguments?.[1];
        if (message) found.push({ where: `${relative(projectRoot, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`, text: literalText(message) });
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    return found;
  }

  it('no error message in runtime/, plugins/, cli/ or stack/ names an embedding-API function or option', () => {
    const names = embeddingApiNames();
    expect(names).toEqual(expect.arrayContaining(['openJournal', 'forkSession', 'readJournal', 'openSession', 'createHarness']));
    const all = messages();
    expect(all.length).toBeGreaterThan(200);
    const offenders = all.map(({ where, text }) => ({ where, names: internalNamesIn(text, names) })).filter((entry) => entry.names.length > 0);
    expect(offenders).toEqual([]);
  });
});
