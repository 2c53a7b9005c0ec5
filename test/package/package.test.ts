/**
 * The package as a user gets it (issue 13): one build, one `npm pack`, the tarball installed into
 * fresh projects outside the repository, then used the ways the README says — a plain-Node script,
 * a strict NodeNext type check of a consumer's plugin, the installed `harness` bin with a project
 * config, `harness init`'s scaffold and its own test — and the tarball's file list.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRelativeLink, linkPath, markdownLinks } from '../support/markdown-links.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';

const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
const version = (name: string): string => JSON.parse(readFileSync(join(repo, 'node_modules', name, 'package.json'), 'utf8')).version;

let root: string;
let tarball: string;
let project: string;
let postgres: TestPostgres | undefined;

/** Runs a command; a non-zero exit fails with its output. */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 180_000, env: { ...process.env, npm_config_update_notifier: 'false', ...env } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result;
}
const install = (cwd: string, ...specs: string[]) => run('npm', ['install', ...specs, '--prefer-offline', '--no-audit', '--no-fund'], cwd);

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'harness-package-')));
  // `npm pack` runs `prepack` (scripts/build.mjs --if-stale): dist/ as the sources are.
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', root], repo).stdout) as { filename: string }[];
  tarball = join(root, packed[0]!.filename);
  project = join(root, 'consumer');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
  install(project, tarball, `typescript@${version('typescript')}`, `@types/node@${version('@types/node')}`);
}, 240_000);

afterAll(async () => {
  await postgres?.stop();
  if (root) await rm(root, { recursive: true, force: true });
}, 180_000);

// Installs and tsc on a shared 2-core machine: minutes, not seconds.
describe('harness-runtime installed from its tarball', { timeout: 150_000 }, () => {
  it('a plain-Node script imports it, defines a zod-typed tool and runs a turn on the scripted model', () => {
    writeFileSync(
      join(project, 'turn.mjs'),
      `import { createHarness, definePlugin, defineTool, messageText, z } from 'harness-runtime';
import { ScriptedAdapter } from 'harness-runtime/plugins/llm-scripted';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const adder = definePlugin({
  name: 'adder',
  setup(ctx) {
    ctx.tools.register(defineTool({
      name: 'add',
      description: 'Adds two numbers.',
      input: z.object({ a: z.number(), b: z.number() }),
      permission: 'read',
      execute: ({ a, b }) => String(a + b),
    }));
  },
});
// The scripted model with an inline script: call the tool, then answer with its result.
const model = definePlugin({
  name: 'llm-scripted',
  setup(ctx) {
    const script = (context) => context.step === 1 ? { toolCalls: [{ name: 'add', arguments: { a: 2, b: 40 } }] } : { text: 'The sum is ' + context.toolResults[0]?.text + '.' };
    ctx.llm.registerAdapter(['scripted'], new ScriptedAdapter({ scripts: new Map([['adder', script]]) }));
  },
});
const dir = mkdtempSync(join(tmpdir(), 'harness-turn-'));
const harness = await createHarness({ dataDir: join(dir, 'data'), config: { defaults: { provider: 'scripted', model: 'adder' }, plugins: [{ plugin: model }, { plugin: adder }] } });
const session = await harness.createSession({ cwd: dir });
let answer = '';
for await (const event of session.run('What is 2 + 40?', { approve: () => 'allow' })) {
  if (event.type === 'assistant/message') answer = messageText(event.data.message);
}
await harness.dispose();
console.log(answer);
`,
    );
    const result = run(process.execPath, ['turn.mjs'], project);
    expect(result.stdout.trim()).toBe('The sum is 42.');
  });

  it("tsc (strict, NodeNext, no skipLibCheck) type-checks a consumer plugin and a config importing every entry against the shipped .d.ts, none of Harness's sources", () => {
    mkdirSync(join(project, 'plugins'), { recursive: true });
    writeFileSync(
      join(project, 'plugins/stream-logger.ts'),
      `import { definePlugin, defineTool, z, type EmitHook } from 'harness-runtime';

declare global {
  namespace Harness {
    interface HookMap { 'stream-logger/call': EmitHook<{ model: string; chunkCount: number; ms: number }> }
  }
}

export default definePlugin({
  name: 'stream-logger',
  config: z.object({ slowMs: z.number().default(2000) }).default({ slowMs: 2000 }),
  setup(ctx, config) {
    ctx.declareHook('stream-logger/call', 'emit');
    ctx.on('stream-logger/call', (call) => {
      const model: string = call.model;
      void model;
    });
    ctx.on('llm/stream', async function* (request, next) {
      const started = performance.now();
      let chunkCount = 0;
      for await (const chunk of next(request)) {
        chunkCount++;
        if (chunk.type === 'finish') {
          const ms = performance.now() - started;
          ctx.emit('stream-logger/call', { model: request.model, chunkCount, ms });
          if (ms > config.slowMs) ctx.report({ level: 'warning', code: 'SLOW_CALL', message: \`\${request.model}: \${Math.round(ms)} ms\` });
        }
        yield chunk;
      }
    });
    ctx.tools.register(
      defineTool({
        name: 'shout',
        description: 'Upper-cases a text.',
        input: z.object({ text: z.string() }),
        permission: 'read',
        execute: ({ text }) => text.toUpperCase(),
      }),
    );
  },
});
`,
    );
    // A wrong payload must be refused: the merged HookMap is what types ctx.emit.
    writeFileSync(
      join(project, 'plugins/wrong.ts'),
      `import { definePlugin } from 'harness-runtime';\nimport './stream-logger.js';\nexport default definePlugin({ name: 'wrong', setup(ctx) { ctx.emit('stream-logger/call', { model: 1 }); } });\n`,
    );
    // A config importing every public entry: each entry's .d.ts, and what they import, must type-check
    // with only the package's own dependencies installed (e.g. no `@types/pg` for journal-postgres).
    writeFileSync(
      join(project, 'harness.config.ts'),
      `import { defineConfig } from 'harness-runtime';
import { defaultPlugins, DEFAULT_DEFAULTS } from 'harness-runtime/stack';
import { createTestHarness, runTurn } from 'harness-runtime/testing';
import journalPostgres, { openPostgresStore, SCHEMA_VERSION } from 'harness-runtime/plugins/journal-postgres';
import llmOpenAI from 'harness-runtime/plugins/llm-openai';

void [createTestHarness, runTurn, openPostgresStore, SCHEMA_VERSION, journalPostgres, llmOpenAI];
export default defineConfig({ defaults: DEFAULT_DEFAULTS, plugins: [...defaultPlugins({ compaction: false }), { module: './plugins/stream-logger.ts' }] });
`,
    );
    // No skipLibCheck for the consumer: the shipped .d.ts must type-check too. The negative check skips them (time).
    const tsconfig = (files: string[], skipLibCheck = false) =>
      JSON.stringify({ compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck, types: ['node'] }, files });
    writeFileSync(join(project, 'tsconfig.json'), tsconfig(['plugins/stream-logger.ts', 'harness.config.ts']));
    const tsc = join(project, 'node_modules/typescript/bin/tsc');
    // --listFiles type-checks too (a type error fails `run`) and names every file the program read.
    const listed = run(process.execPath, [tsc, '--noEmit', '-p', '.', '--listFiles'], project).stdout.split('\n').filter(Boolean);
    const fromPackage = listed.filter((file) => file.includes('/node_modules/harness-runtime/'));
    expect(fromPackage).toContain(join(project, 'node_modules/harness-runtime/dist/runtime/index.d.ts'));
    for (const entry of ['stack/index.d.ts', 'testing/index.d.ts', 'plugins/journal-postgres/schema.d.ts']) {
      expect(fromPackage).toContain(join(project, 'node_modules/harness-runtime/dist', entry));
    }
    expect(fromPackage.filter((file) => !file.endsWith('.d.ts'))).toEqual([]);

    writeFileSync(join(project, 'tsconfig.wrong.json'), tsconfig(['plugins/wrong.ts'], true));
    const wrong = spawnSync(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.wrong.json'], { cwd: project, encoding: 'utf8' });
    expect(wrong.status).not.toBe(0);
    expect(wrong.stdout).toContain('plugins/wrong.ts');
    expect(wrong.stdout).toContain("Type 'number' is not assignable to type 'string'");
  }, 240_000);

  it('every shipped module loads from the installed package (each relative import resolves), the CLI entries aside', () => {
    const dist = join(project, 'node_modules/harness-runtime/dist');
    const modules: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.m?js$/.test(entry.name) && !path.startsWith(join(dist, 'viewer'))) modules.push(path);
      }
    };
    walk(dist);
    // scripts/dist-imports.mjs (the build's and check:package's check) on the installed files: no `.ts` specifier, none missing.
    const check = `import { checkDistImports } from ${JSON.stringify(join(repo, 'scripts/dist-imports.mjs'))}; checkDistImports(${JSON.stringify(dist)});`;
    run(process.execPath, ['--input-type=module', '-e', check], project);
    // bin.js and start.js run the CLI when imported; the bin test below runs them.
    const entries = [join(dist, 'cli/bin.js'), join(dist, 'cli/start.js')];
    const imported = modules.filter((path) => !entries.includes(path));
    expect(imported).toContain(join(dist, 'plugins/journal-postgres/store.js'));
    writeFileSync(join(project, 'import-all.mjs'), `for (const path of ${JSON.stringify(imported)}) await import(path);\nconsole.log('imported', ${imported.length});\n`);
    expect(run(process.execPath, ['import-all.mjs'], project).stdout.trim()).toBe(`imported ${imported.length}`);
  });

  it('the installed harness bin runs a turn into a postgres:// store and lists it (journal-postgres loads its store lazily)', async () => {
    postgres = await startPostgres();
    const dir = join(root, 'pg-project');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.md'), '# Notes\n');
    const bin = join(project, 'node_modules/.bin/harness');
    const env = { HARNESS_HOME: join(root, 'home-pg'), NO_COLOR: '1' };
    const ran = run(bin, ['--store', postgres.url, 'run', 'What is in this workspace?'], dir, env);
    expect(ran.stdout).toContain('notes.md');
    const id = new RegExp(`${postgres.url}#([0-9a-f-]{36})`).exec(ran.stdout)?.[1];
    expect(id, ran.stdout).toBeDefined();
    const listed = run(bin, ['--store', postgres.url, 'sessions'], dir, env);
    expect(listed.stdout).toContain(id!.slice(0, 8));
  });

  it("the installed harness bin runs a turn with the README's harness.config.ts: the built-in stack plus a plugin of the project", () => {
    // The README's "Use it in your project" steps, its files taken from the README as written.
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Use it in your project'), readme.indexOf('## The CLI at a glance'));
    const [config, plugin] = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
    expect(config).toContain("from 'harness-runtime/stack'");
    expect(plugin).toContain("name: 'stamp'");
    const dir = join(root, 'my-project');
    mkdirSync(join(dir, 'plugins'), { recursive: true });
    run('npm', ['init', '-y'], dir);
    run('npm', ['pkg', 'set', 'type=module'], dir);
    writeFileSync(join(dir, 'harness.config.ts'), config!);
    writeFileSync(join(dir, 'plugins/stamp.ts'), plugin!);
    writeFileSync(join(dir, 'notes.md'), '# Notes\n\nThe project has one file of notes.\n');
    install(dir, tarball);
    const home = join(root, 'home');
    const result = run(join(dir, 'node_modules/.bin/harness'), ['run', 'What is in this workspace?'], dir, { HARNESS_HOME: home, NO_COLOR: '1' });
    expect(result.stdout).toContain('notes.md');
    expect(result.stdout).toContain(join(home, 'sessions'));
    const calls = readFileSync(join(dir, 'calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { model: string; chunkCount: number });
    expect(calls.length).toBeGreaterThanOrEqual(2); // the scripted default model: list the files, read one, answer
    for (const call of calls) {
      expect(call.model).toBe('scripted-default');
      expect(call.chunkCount).toBeGreaterThan(0);
    }
  });

  it('harness init <dir> scaffolds a project whose own test passes offline, whose npm start calls its tool, and which type-checks', () => {
    const dir = join(root, 'my-agent');
    const made = run(join(project, 'node_modules/.bin/harness'), ['init', dir], root, { HARNESS_HOME: join(root, 'home'), NO_COLOR: '1' });
    // harness-runtime is not on the registry: the next steps install it from a tarball or a folder, as done here.
    expect(made.stdout).toContain('npm install <harness-runtime .tgz or folder>');
    install(dir, tarball);
    const result = run('npm', ['test'], dir);
    expect(`${result.stdout}${result.stderr}`).toMatch(/# pass 1\b/);
    expect(`${result.stdout}${result.stderr}`).toMatch(/# fail 0\b/);
    // `npm start`: the scaffold's scripted model calls its own tool and answers with the count.
    const home = join(root, 'home-init');
    const start = run('npm', ['start'], dir, { HARNESS_HOME: home, NO_COLOR: '1' });
    expect(start.stdout).toContain('It has 4 words.');
    const journal = readFileSync(join(home, 'sessions', readdirSync(join(home, 'sessions')).find((name) => name.endsWith('.jsonl'))!), 'utf8');
    const calls = journal
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; data: { name?: string; arguments?: string } })
      .filter((event) => event.type === 'tool/call');
    expect(calls.map((event) => [event.data.name, event.data.arguments])).toEqual([['word_count', '{"text":"the quick brown fox"}']]);
    // Its tsconfig's `types: ["node"]` and `tsc` come from its own devDependencies.
    run('npm', ['run', 'typecheck'], dir);
  });

  it('the tarball holds dist/, bin/, README, LICENSE, package.json and the cookbook pages only', () => {
    const [pack] = JSON.parse(run('npm', ['pack', '--dry-run', '--json'], repo).stdout) as { files: { path: string }[] }[];
    const paths = pack!.files.map((file) => file.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'bin/harness.js',
        'dist/runtime/index.js',
        'dist/runtime/index.d.ts',
        'dist/cli/bin.js',
        'dist/stack/index.js',
        'dist/testing/index.js',
        'dist/plugins/llm-scripted/index.js',
        // The session viewer's built page (its assets are named by content hash).
        'dist/viewer/index.html',
        // The cookbook's pages (its examples stay in the repository; the pages link them there).
        'cookbook/README.md',
        'cookbook/serve.md',
      ]),
    );
    expect(paths.filter((path) => !/^(dist\/|bin\/harness\.js$|README\.md$|LICENSE$|package\.json$|cookbook\/[\w-]+\.md$)/.test(path))).toEqual([]);
    expect(paths.filter((path) => /(^|\/)(test|bench|scripts|\.ci)\/|\.test\.|\.bench\./.test(path))).toEqual([]);
    expect(paths.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);
    expect(existsSync(tarball)).toBe(true);
    // In node_modules, the README's and the cookbook's relative links name installed files.
    const installed = join(project, 'node_modules/harness-runtime');
    const broken: string[] = [];
    for (const doc of ['README.md', ...readdirSync(join(installed, 'cookbook')).map((name) => `cookbook/${name}`)]) {
      for (const target of markdownLinks(readFileSync(join(installed, doc), 'utf8')).filter(isRelativeLink)) {
        if (!existsSync(join(installed, dirname(doc), linkPath(target)))) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
    expect(readFileSync(join(installed, 'README.md'), 'utf8')).toContain('](cookbook/README.md)');
  });
});
