/**
 * `harness view [session]` as a user runs it: it binds 127.0.0.1, prints the page's URL with a fresh
 * token in its fragment, serves the built viewer and the sessions read-only (403 READ_ONLY for
 * anything but GET), and the page opened from that URL shows the session; SIGTERM ends it.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, dshRoot, harness, tempDir } from '../cli/support.ts';
import { ensureViewerBuilt, launchBrowser, VIEWER_DIR, type Browser } from './support.ts';

const home = tempDir('viewer-cli');
let browser: Browser;
beforeAll(async () => {
  ensureViewerBuilt();
  const imported = await harness(['import', 'dsh', join(dshRoot, 'acp-agent', 'fs-edit', 'session.jsonl'), '--id', 'fs-edit'], { home: home.dir });
  expect(imported.code, imported.stderr).toBe(0);
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  home.cleanup();
});

describe('harness view', { timeout: 90_000 }, () => {
  it('prints a 127.0.0.1 URL with a token, serves the page and the session read-only, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [bin, 'view', 'fs-ed'], { env: cleanEnv({ HARNESS_HOME: home.dir, HARNESS_VIEWER_DIR: VIEWER_DIR }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const printed = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const match = /^harness view: (\S+)$/m.exec(out);
        if (match) resolve(match[1]!);
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    try {
      const url = new URL(printed);
      expect(url.hostname).toBe('127.0.0.1');
      expect(url.pathname).toBe('/viewer/');
      expect(url.searchParams.get('session')).toBe('fs-edit'); // the prefix resolved to the session
      const token = new URLSearchParams(url.hash.slice(1)).get('token')!;
      expect(token.length).toBeGreaterThanOrEqual(32);
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const unauthorized = await fetch(`${url.origin}/v1/sessions`);
      expect(unauthorized.status).toBe(401);
      // It names where view's token is, not serve's.
      expect(((await unauthorized.json()) as { error: { message: string } }).error.message).toBe(
        'This server needs "Authorization: Bearer <token>" (the token in the #fragment of the URL harness view printed).',
      );
      const list = (await (await fetch(`${url.origin}/v1/sessions`, { headers })).json()) as { sessions: { id: string }[] };
      expect(list.sessions.map((s) => s.id)).toEqual(['fs-edit']);
      for (const path of ['/v1/sessions', '/v1/sessions/fs-edit/turns', '/v1/sessions/fs-edit/abort']) {
        const refused = await fetch(`${url.origin}${path}`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'hi' }) });
        expect(refused.status, path).toBe(403);
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('READ_ONLY');
      }

      const { page, errors } = await browser.page();
      await page.goto(printed);
      const turn = page.locator('article.turn[data-turn="1"]');
      await turn.locator('.item.tool').nth(1).waitFor();
      expect(await turn.locator('.item.tool code.name').allInnerTexts()).toEqual(['read', 'edit']);
      // Read-only: no prompt box, no approval buttons.
      expect(await page.locator('form.composer').count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Allow' }).count()).toBe(0);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(143);
  });

  it('refuses a session that is not there, naming the command that lists them', async () => {
    const result = await harness(['view', 'no-such-session'], { home: home.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error SESSION_NOT_FOUND');
    expect(result.stderr).toContain('harness sessions');
  });
});
