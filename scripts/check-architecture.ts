/**
 * The layout of DESIGN "Layout" as a checked boundary (`npm run check:architecture`, run by `.ci/run`).
 *
 * Rules, each with the tool that checks it:
 * - `runtime-typechecks-alone` (tsc, tsconfig.runtime.json): runtime/ type-checks with nothing but
 *   itself and npm packages — no declaration merged in from a plugin or the CLI.
 * - `no-cycles`, `runtime-imports-only-runtime`, `plugin-imports-public-entry`,
 *   `plugin-stays-in-its-folder`, `plugin-test-uses-testing`, `testing-uses-public-entry` (testing/
 *   and stack/),
 *   `cookbook-uses-public-entry` (dependency-cruiser, .dependency-cruiser.cjs): static imports,
 *   type-only ones included.
 * - `runtime-no-path-strings` (this script; no tool follows strings): no string in runtime/ names a
 *   `plugins/` or `cli/` path — the runtime cannot load a plugin or the CLI by a path built at run
 *   time either. A string in the message argument of `new HarnessError/LlmError(…)` or `llmFailure(…)`
 *   is a sentence for a person and may name one.
 * - `runtime-no-default-model` (this script): no string in runtime/ is `'scripted'` or contains
 *   `scripted-default` — the runtime knows no default model; it comes from the config (or the
 *   run), else `NO_DEFAULT_MODEL`. Error messages are not exempt: a hinted model is a guess too.
 * - `plugin-no-runtime-path-strings` (this script): no string in plugins/ names a runtime/ file other
 *   than the public entry (a dynamic `import()` of an internal path).
 * - `public-names-documented` (this script, TypeScript's checker): every name runtime/index.ts
 *   exports has a docstring on its declaration.
 *
 * `--self-check` copies the tree to a temporary folder, plants one violation per rule there (never in
 * the tree) and exits non-zero unless every rule reports exactly its planted violation.
 * `--root <dir>` checks another checkout. Exit code 1 on any violation.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface Violation {
  readonly rule: string;
  /** Repository-relative file the violation is in. */
  readonly file: string;
  readonly message: string;
}

const repoRoot = resolve(import.meta.dirname, '..');

// ── tsc: runtime/ on its own ──────────────────────────────────────────────────────────────────

/** The program of tsconfig.runtime.json: runtime/ and the npm packages it uses, nothing else. */
export function runtimeProgram(root: string): ts.Program {
  const configPath = join(root, 'tsconfig.runtime.json');
  const host: ts.ParseConfigFileHost = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined };
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, host);
  if (parsed === undefined) throw new Error(`${configPath} could not be read`);
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
}

export function runtimeTypecheck(root: string, program: ts.Program = runtimeProgram(root)): Violation[] {
  const violations: Violation[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file ? relative(root, diagnostic.file.fileName) : 'tsconfig.runtime.json';
    const where = diagnostic.file && diagnostic.start !== undefined ? `:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1}` : '';
    violations.push({ rule: 'runtime-typechecks-alone', file, message: `${file}${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}` });
  }
  // A file outside runtime/ pulled in by an import would be type-checked "alone" by accident.
  const outside = program
    .getSourceFiles()
    .map((sourceFile) => relative(root, sourceFile.fileName))
    .filter((file) => !file.startsWith('runtime/') && !file.split(/[\\/]/).includes('node_modules'));
  if (outside.length > 0) {
    const listed = outside.slice(0, 5).join(', ') + (outside.length > 5 ? `, … (${outside.length} files)` : '');
    violations.push({ rule: 'runtime-typechecks-alone', file: outside[0]!, message: `the runtime's own type check pulls in files outside runtime/: ${listed}` });
  }
  return violations;
}

// ── dependency-cruiser: static imports ────────────────────────────────────────────────────────

const CRUISED = ['runtime', 'cli', 'plugins', 'testing', 'stack', 'cookbook'];

export function cruise(root: string): Violation[] {
  const folders = CRUISED.filter((folder) => existsSync(join(root, folder)));
  const bin = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  const result = spawnSync(process.execPath, [bin, ...folders, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (result.error) throw result.error;
  let report: { summary: { violations: { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] }[] } };
  try {
    report = JSON.parse(result.stdout);
  } catch {
    throw new Error(`dependency-cruiser failed (exit ${result.status}): ${result.stderr || result.stdout}`);
  }
  return report.summary.violations.map((violation) => ({
    rule: violation.rule.name,
    file: violation.from,
    message: violation.cycle ? `${[violation.from, ...violation.cycle.map((step) => step.name)].join(' → ')}` : `${violation.from} → ${violation.to}`,
  }));
}

// ── Strings: paths loaded at run time ────────────────────────────────────────────────────────

const MESSAGE_CALLS = new Set(['HarnessError', 'LlmError', 'llmFailure']);

/** True when `node` sits in the message argument (the 2nd) of `new HarnessError(…)`, `new LlmError(…)` or `llmFailure(…)`. */
function inMessageArgument(node: ts.Node): boolean {
  for (let child: ts.Node = node, parent = node.parent; parent !== undefined; child = parent, parent = parent.parent) {
    if ((ts.isNewExpression(parent) || ts.isCallExpression(parent)) && ts.isIdentifier(parent.expression) && MESSAGE_CALLS.has(parent.expression.text)) {
      return parent.arguments?.[1] === child;
    }
    if (ts.isFunctionLike(parent) || ts.isSourceFile(parent)) return false;
  }
  return false;
}

/** The text pieces of every string in a file: literals, template heads, middles and tails. */
function stringsOf(sourceFile: ts.SourceFile): { node: ts.Node; text: string }[] {
  const out: { node: ts.Node; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      out.push({ node, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return out;
}

function tsFiles(root: string, folder: string): string[] {
  const base = join(root, folder);
  if (!existsSync(base)) return [];
  return ts.sys.readDirectory(base, ['.ts', '.mts', '.cts'], ['**/node_modules/**'], undefined).filter((file) => !file.endsWith('.d.ts'));
}

/** A `plugins/` or `cli/` path segment, or a bare `'plugins'`/`'cli'` (as in `join(root, 'plugins', name)`). */
const RUNTIME_FORBIDDEN = /(?:^|[^\w.-])(?:plugins|cli)[\\/]|^(?:plugins|cli)$/;
/** The scripted model's provider or default model: a default the runtime must not know. */
const RUNTIME_DEFAULT_MODEL = /^scripted$|scripted-default/;
/** A runtime/ path naming any file but the public entry. */
const PLUGIN_FORBIDDEN = /(?:^|[^\w-])runtime[\\/](?!index\.(?:ts|js)\b)[\w.-]/;

export function scanStrings(root: string): Violation[] {
  const violations: Violation[] = [];
  const scan = (folder: string, rule: string, pattern: RegExp, allowMessages: boolean, what = 'names a path this layer must not load'): void => {
    for (const path of tsFiles(root, folder)) {
      const file = relative(root, path);
      const sourceFile = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
      for (const { node, text } of stringsOf(sourceFile)) {
        if (!pattern.test(text) || (allowMessages && inMessageArgument(node))) continue;
        const line = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line + 1;
        violations.push({ rule, file, message: `${file}:${line}: the string ${JSON.stringify(text)} ${what}` });
      }
    }
  };
  scan('runtime', 'runtime-no-path-strings', RUNTIME_FORBIDDEN, true);
  scan('runtime', 'runtime-no-default-model', RUNTIME_DEFAULT_MODEL, false, 'names a default model the runtime must not know (it comes from the config)');
  scan('plugins', 'plugin-no-runtime-path-strings', PLUGIN_FORBIDDEN, false);
  return violations;
}

// ── Docstrings on the public names ────────────────────────────────────────────────────────────

export function publicDocs(root: string, program: ts.Program = runtimeProgram(root)): Violation[] {
  const checker = program.getTypeChecker();
  const entry = program.getSourceFile(join(root, 'runtime', 'index.ts'));
  const moduleSymbol = entry && checker.getSymbolAtLocation(entry);
  if (moduleSymbol === undefined) return [{ rule: 'public-names-documented', file: 'runtime/index.ts', message: 'runtime/index.ts exports nothing' }];
  const violations: Violation[] = [];
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const declarations = target.declarations ?? [];
    const file = declarations[0] ? relative(root, declarations[0].getSourceFile().fileName) : 'runtime/index.ts';
    if (!file.startsWith('runtime/')) continue; // re-exported from a package (z): documented there
    const documented = declarations.some((declaration) => {
      const holder = ts.isVariableDeclaration(declaration) ? declaration.parent.parent : declaration;
      return ts.getJSDocCommentsAndTags(holder).length > 0;
    });
    if (!documented) violations.push({ rule: 'public-names-documented', file, message: `${exported.name} (${file}) is public but has no docstring: say its shape, units, errors and seed section` });
  }
  return violations;
}

// ── Running ──────────────────────────────────────────────────────────────────────────────────

export function checkAll(root: string): Violation[] {
  const program = runtimeProgram(root);
  return [...runtimeTypecheck(root, program), ...cruise(root), ...scanStrings(root), ...publicDocs(root, program)];
}

/** Every rule with the violation planted for it in a copy of the tree: file → content (appended). */
const PLANTS: { rule: string; file: string; content: string; expect: RegExp }[] = [
  {
    rule: 'runtime-typechecks-alone',
    // Type-checks with the whole project (a plugin declares the global below), not with runtime/ alone.
    file: 'runtime/planted-ambient.ts',
    content: 'export const planted: Harness.PlantedByAPlugin = { fromPlugin: true };\n',
    expect: /runtime\/planted-ambient\.ts/,
  },
  { rule: 'no-cycles', file: 'runtime/kernel/planted-cycle-a.ts', content: "import { b } from './planted-cycle-b.ts';\nexport const a = (): number => b() + 1;\n", expect: /planted-cycle-a\.ts/ },
  { rule: 'runtime-imports-only-runtime', file: 'runtime/planted-cli.ts', content: "export { main } from '../cli/main.ts';\n", expect: /runtime\/planted-cli\.ts → cli\/main\.ts/ },
  {
    rule: 'plugin-imports-public-entry',
    file: 'plugins/llm-retry/planted-internal.ts',
    content: "export { HookBus } from '../../runtime/internal.ts';\n",
    expect: /plugins\/llm-retry\/planted-internal\.ts → runtime\/internal\.ts/,
  },
  {
    rule: 'plugin-stays-in-its-folder',
    file: 'plugins/llm-retry/planted-neighbour.ts',
    content: "export { default } from '../approvals/index.ts';\n",
    expect: /planted-neighbour\.ts → plugins\/approvals\/index\.ts/,
  },
  { rule: 'plugin-test-uses-testing', file: 'plugins/llm-retry/planted.test.ts', content: "export { main } from '../../cli/main.ts';\n", expect: /planted\.test\.ts → cli\/main\.ts/ },
  {
    rule: 'testing-uses-public-entry',
    file: 'testing/planted-internal.ts',
    content: "export { HookBus } from '../runtime/internal.ts';\n",
    expect: /testing\/planted-internal\.ts → runtime\/internal\.ts/,
  },
  {
    rule: 'testing-uses-public-entry',
    file: 'stack/planted-internal.ts',
    content: "export { PluginHost } from '../runtime/internal.ts';\n",
    expect: /stack\/planted-internal\.ts → runtime\/internal\.ts/,
  },
  {
    rule: 'cookbook-uses-public-entry',
    file: 'cookbook/planted-internal.ts',
    content: "export { HookBus } from '../runtime/internal.ts';\n",
    expect: /cookbook\/planted-internal\.ts → runtime\/internal\.ts/,
  },
  {
    rule: 'runtime-no-path-strings',
    file: 'runtime/planted-path.ts',
    content:
      "import { join } from 'node:path';\nexport const load = (root: string): Promise<unknown> => import(join(root, 'plugins', 'llm-scripted', 'index.ts'));\nexport const cli = (): Promise<unknown> => import(`../cli/main.ts`);\n",
    expect: /runtime\/planted-path\.ts:\d+: the string "plugins"/,
  },
  {
    rule: 'runtime-no-default-model',
    file: 'runtime/planted-default-model.ts',
    content: "export const fallback = { provider: 'scripted', model: 'scripted-default' };\n",
    expect: /runtime\/planted-default-model\.ts:\d+: the string "scripted"/,
  },
  {
    rule: 'plugin-no-runtime-path-strings',
    file: 'plugins/llm-retry/planted-dynamic.ts',
    content: "export const internals = (): Promise<unknown> => import(new URL('../../runtime/internal.ts', import.meta.url).href);\n",
    expect: /planted-dynamic\.ts:\d+: the string "\.\.\/\.\.\/runtime\/internal\.ts"/,
  },
  { rule: 'public-names-documented', file: 'runtime/planted-undocumented.ts', content: 'export const plantedUndocumented = 1;\n', expect: /plantedUndocumented/ },
];

/** Extra files a plant needs that are not themselves the violation. */
const PLANT_SUPPORT: Record<string, string> = {
  'runtime/kernel/planted-cycle-b.ts': "import { a } from './planted-cycle-a.ts';\nexport const b = (): number => (typeof a === 'function' ? 1 : 0);\n",
  'plugins/llm-retry/planted-ambient.ts': 'declare global {\n  namespace Harness {\n    interface PlantedByAPlugin { fromPlugin: boolean }\n  }\n}\nexport {};\n',
};

export function selfCheck(root: string): { ok: boolean; lines: string[] } {
  const copy = mkdtempSync(join(tmpdir(), 'harness-architecture-'));
  const lines: string[] = [];
  try {
    for (const entry of ['runtime', 'cli', 'plugins', 'testing', 'stack', 'cookbook', 'package.json', 'tsconfig.json', 'tsconfig.runtime.json', '.dependency-cruiser.cjs']) {
      if (existsSync(join(root, entry))) cpSync(join(root, entry), join(copy, entry), { recursive: true, filter: (source) => !source.includes('node_modules') });
    }
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
    const write = (file: string, content: string): void => writeFileSync(join(copy, file), content);
    for (const plant of PLANTS) write(plant.file, content(plant));
    for (const [file, text] of Object.entries(PLANT_SUPPORT)) write(file, `/** Planted by the architecture self-check. */\n${text}`);
    // The documented plants must not trip public-names-documented; only the undocumented one is exported.
    writeFileSync(join(copy, 'runtime/index.ts'), `${readFileSync(join(copy, 'runtime/index.ts'), 'utf8')}\nexport { plantedUndocumented } from './planted-undocumented.ts';\n`);
    const violations = checkAll(copy);
    let ok = true;
    for (const plant of PLANTS) {
      const found = violations.filter((violation) => violation.rule === plant.rule);
      const hit = found.some((violation) => plant.expect.test(violation.message));
      if (!hit) ok = false;
      lines.push(
        `${hit ? 'ok  ' : 'MISS'} ${plant.rule}: ${hit ? 'fails on the planted violation' : `did not report ${plant.file} (reported: ${found.map((v) => v.message).join('; ') || 'nothing'})`}`,
      );
    }
    return { ok, lines };
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

function content(plant: (typeof PLANTS)[number]): string {
  // Every plant but the undocumented one carries a docstring, so it trips only its own rule.
  return plant.rule === 'public-names-documented' ? plant.content : `/** Planted by the architecture self-check (${plant.rule}). */\n${plant.content}`;
}

function main(argv: readonly string[]): number {
  const rootIndex = argv.indexOf('--root');
  const root = rootIndex >= 0 && argv[rootIndex + 1] ? resolve(argv[rootIndex + 1]!) : repoRoot;
  if (argv.includes('--self-check')) {
    const { ok, lines } = selfCheck(root);
    for (const line of lines) console.log(line);
    console.log(ok ? 'architecture self-check: every rule fails on its planted violation' : 'architecture self-check FAILED');
    return ok ? 0 : 1;
  }
  const violations = checkAll(root);
  for (const violation of violations) console.error(`${violation.rule}: ${violation.message}`);
  if (violations.length > 0) {
    console.error(`\n${violations.length} architecture violation(s); the rules are explained in scripts/check-architecture.ts and .dependency-cruiser.cjs.`);
    return 1;
  }
  console.log('architecture: runtime type-checks alone, no cycles, plugins use the public entry, the runtime loads no plugin or CLI and knows no default model, public names documented');
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) process.exitCode = main(process.argv.slice(2));
