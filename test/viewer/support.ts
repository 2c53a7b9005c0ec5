/**
 * The viewer's tests: the built page (scripts/build-viewer.mjs), served by the real serve app on
 * 127.0.0.1 over a harness with the scripted model, and Debian's Chromium driven by playwright-core
 * (never a downloaded browser), kept off the network by its flags.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { createHarness, defineTool, readJournal, z, type AnySessionEvent, type Harness } from '../../runtime/index.ts';
import { journalPath } from '../../runtime/internal.ts';
import { buildApp, TurnService } from '../../plugins/serve/index.ts';
import { plugin, root } from '../agent/support.ts';

export const TOKEN = 'viewer-test-token-0123456789abcdef';
export const CHROMIUM = '/usr/bin/chromium';
/** Screenshots for a reviewer (git-ignored, never committed). */
export const SHOTS = join(root, 'test', '.tmp-viewer');

/** Tool output that would run script if it reached the DOM as HTML. */
export const XSS = [
  '<script>window.__xss = "script"</script>',
  '<img src=x onerror="window.__xss = \'img\'">',
  '<svg onload="window.__xss = \'svg\'"></svg>',
  '</pre><script>alert("pre")</script>',
  '<a href="javascript:window.__xss=\'href\'">click me</a>',
  '<iframe src="javascript:alert(1)"></iframe>',
  '"><script>alert(1)</script>',
].join('\n');
/** Markdown from a model that would run script if rendered unsafely. */
export const XSS_MARKDOWN = [
  'A [javascript link](javascript:window.__xss=%22md%22) and a [good link](https://example.com/docs).',
  '',
  '<script>window.__xss = "md-script"</script>',
  '',
  '<img src=x onerror="window.__xss=\'md-img\'">',
  '',
  '[data link](data:text/html,<script>alert(1)</script>)',
].join('\n');

/** The scripted model's replies, by prompt. */
const SCRIPT = {
  replies: [
    {
      when: { userIncludes: 'edit', step: 1 },
      reply: {
        reasoning: 'The user wants the greeting changed; edit_file does it.',
        text: 'I will **edit** `notes.md`.',
        toolCalls: [{ name: 'edit_file', arguments: { path: 'notes.md', old_string: 'hello world', new_string: 'hello viewer' } }],
      },
    },
    { when: { userIncludes: 'edit', step: 2 }, reply: { text: 'Edited: the greeting now says *hello viewer*.' } },
    { when: { userIncludes: 'xss', step: 1 }, reply: { text: XSS_MARKDOWN, toolCalls: [{ name: 'xss', arguments: { probe: '<script>alert("args")</script>' } }] } },
    { when: { userIncludes: 'xss', step: 2 }, reply: { text: 'The output above is only text.' } },
    { when: { userIncludes: 'poke', step: 1 }, reply: { text: 'Poking.', toolCalls: [{ name: 'poke', arguments: { key: 'k', value: 'v' } }] } },
    { when: { userIncludes: 'poke', step: 2 }, reply: { text: 'Poked.' } },
    { when: { userIncludes: 'long' }, reply: { text: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ') } },
    { reply: { text: 'Hello from the scripted model.' } },
  ],
};

/** The scripted model's price in the tests (USD per million tokens). */
export const PRICE = { inputTokens: 1000, outputTokens: 2000 };

/** What `usage` costs at {@link PRICE}, as the page shows it. */
export function priced(usage: { inputTokens?: number; outputTokens?: number }): string {
  const usd = ((usage.inputTokens ?? 0) * PRICE.inputTokens + (usage.outputTokens ?? 0) * PRICE.outputTokens) / 1e6;
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/**
 * The tests' own build of the viewer: the same build as dist/viewer, in a folder no `npm run build`
 * (the package test packs one) empties while a test serves it.
 */
export const VIEWER_DIR = join(SHOTS, 'dist');

/** Builds the viewer into {@link VIEWER_DIR} when a source is newer than it (once, whatever the number of callers). */
export function ensureViewerBuilt(): void {
  const result = spawnSync(process.execPath, [join(root, 'scripts', 'build-viewer.mjs'), '--if-stale', '--out', VIEWER_DIR], { cwd: root, encoding: 'utf8' });
  expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
  expect(existsSync(join(VIEWER_DIR, 'index.html'))).toBe(true);
}

export interface Served {
  readonly harness: Harness;
  readonly turns: TurnService;
  readonly app: ReturnType<typeof buildApp>;
  readonly url: string;
  readonly dir: string;
  readonly workspace: string;
  readonly ran: string[];
  /** The events of a session's journal. */
  journal(id: string): Promise<AnySessionEvent[]>;
  close(): Promise<void>;
}

/** The serve app over a scripted harness (approvals asked over HTTP), listening on 127.0.0.1:0. */
export async function serveViewer(options: { paceMs?: number; readOnly?: boolean } = {}): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-viewer-'));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'notes.md'), '# Notes\n\nhello world\n');
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(SCRIPT));
  const harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'scripted', model: 'test' },
      plugins: [
        { module: plugin('llm-scripted'), config: { paceMs: options.paceMs ?? 0, fragmentChars: 4, scripts: { test: scriptPath } } },
        { module: plugin('approvals') },
        { module: plugin('tools-workspace') },
        // USD per million tokens: large enough that a short turn costs whole cents.
        { module: plugin('token-meter'), config: { prices: { scripted: { test: PRICE } } } },
      ],
    },
  });
  const ran: string[] = [];
  harness.ctx.tools.register(defineTool({ name: 'xss', description: 'Returns hostile text.', input: z.object({ probe: z.string() }), permission: 'read', execute: () => XSS }));
  harness.ctx.tools.register(
    defineTool({
      name: 'poke',
      description: 'Writes a value.',
      input: z.object({ key: z.string(), value: z.string() }),
      permission: 'write',
      execute: ({ key, value }) => {
        ran.push(`poke:${key}=${value}`);
        return 'ok';
      },
    }),
  );
  const turns = new TurnService(harness, { approvalPolicy: 'always-ask', approvalTimeoutMs: 60_000, cwd: workspace });
  const app = buildApp(turns, { token: TOKEN, maxBodyBytes: 1024 * 1024, viewerDir: VIEWER_DIR, ...(options.readOnly ? { readOnly: true } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    harness,
    turns,
    app,
    url: `http://127.0.0.1:${port}`,
    dir,
    workspace,
    ran,
    async journal(id) {
      const out: AnySessionEvent[] = [];
      for await (const event of readJournal(journalPath(id, harness.dataDir))) out.push(event);
      return out;
    },
    async close() {
      await turns.close();
      await app.close();
      await harness.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs one turn to its end through the turn API (approvals by `approve`), returning its session id. */
export async function runTurn(s: Served, prompt: string, approve = 'allow-all', sessionId?: string): Promise<string> {
  const id = sessionId ?? (await s.turns.createSession({ cwd: s.workspace })).id;
  const { turn } = await s.turns.submitTurn(id, { prompt, approve });
  const end = await s.turns.turnEnd(id, turn);
  expect(end?.data.reason).toBe('completed');
  return id;
}

export interface Browser {
  readonly context: BrowserContext;
  /** A new tab; a dialog (alert) fails the test, page errors are collected. */
  page(): Promise<{ page: Page; dialogs: string[]; errors: string[] }>;
  close(): Promise<void>;
}

/** Debian's Chromium, headless, a fresh profile, off the network. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it).`);
  const profile = mkdtempSync(join(tmpdir(), 'harness-viewer-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1200, height: 900 },
  });
  return {
    context,
    async page() {
      const page = await context.newPage();
      const dialogs: string[] = [];
      const errors: string[] = [];
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      page.on('pageerror', (error) => errors.push(error.message));
      return { page, dialogs, errors };
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the viewer on a session (or the list) with the token in the fragment. */
export async function openViewer(page: Page, url: string, query = ''): Promise<void> {
  await page.goto(`${url}/viewer/${query}#token=${TOKEN}`);
}

export function screenshotPath(name: string): string {
  mkdirSync(SHOTS, { recursive: true });
  return join(SHOTS, name);
}
