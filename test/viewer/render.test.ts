/**
 * The viewer in headless Chromium (issue 19): the session list, a session written by Harness (its
 * messages, reasoning collapsed, the tool call with its approval, the diff of its edit), an
 * imported DeepSeek Harness session, the scrubber's state at a mid-turn seq equal to
 * `harness replay --at`, raw events, the page's token and headers, and an XSS corpus that renders
 * inert; retries, compactions and plugin reloads as marked events. Writes a screenshot to test/.tmp-viewer/ for a reviewer.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, writeImportedSession } from '../../runtime/index.ts';
import { plugin } from '../agent/support.ts';
import { VIEWER_CSP } from '../../plugins/serve/index.ts';
import { dshRoot, harness as cli } from '../cli/support.ts';
import { ensureViewerBuilt, launchBrowser, openViewer, priced, runTurn, screenshotPath, serveViewer, TOKEN, XSS, type Browser, type Served } from './support.ts';

let s: Served;
let browser: Browser;
let editId: string;
let dshId: string;

beforeAll(async () => {
  ensureViewerBuilt();
  s = await serveViewer();
  browser = await launchBrowser();
  editId = await runTurn(s, 'Please edit the greeting in notes.md');
  dshId = (await writeImportedSession(join(dshRoot, 'acp-agent', 'fs-edit', 'session.jsonl'), { dataDir: s.harness.dataDir, id: 'dsh-fs-edit' })).header.id;
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('the page', { timeout: 60_000 }, () => {
  it('is served without a token with a strict CSP; the API still needs the token, and a wrong one shows the token form', async () => {
    const response = await fetch(`${s.url}/viewer/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(VIEWER_CSP);
    expect(await response.text()).toContain('<script type="module"');
    expect((await fetch(`${s.url}/`, { redirect: 'manual' })).headers.get('location')).toBe('/viewer/');
    expect((await fetch(`${s.url}/v1/sessions`)).status).toBe(401);
    expect((await fetch(`${s.url}/viewer/..%2f..%2fpackage.json`)).status).toBe(404);

    const { page } = await browser.page();
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(`${s.url}/viewer/#token=not-the-right-token-at-all`);
    await page.getByText('The server did not accept the token.').waitFor();
    // The token is out of the address bar at once.
    expect(page.url()).toBe(`${s.url}/viewer/`);
    await page.getByLabel('Token').fill(TOKEN);
    await page.keyboard.press('Enter');
    await page.locator(`tr[data-session-id="${editId}"]`).waitFor();
    // Nothing but the server itself: no CDN, no network.
    expect(requests.filter((url) => !url.startsWith(s.url))).toEqual([]);
    await page.close();
  });

  it('lists the sessions: title, workspace, turns, tokens, last update', async () => {
    const { page } = await browser.page();
    await openViewer(page, s.url);
    const row = page.locator(`tr[data-session-id="${editId}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allInnerTexts();
    expect(cells[0]).toBe('Please edit the greeting in notes.md');
    expect(cells[1]).toBe(s.workspace);
    expect(cells[2]).toBe('1');
    expect(Number(cells[3]!.replace(/,/g, ''))).toBeGreaterThan(0);
    // Cost at the token meter's prices, over the journal's usage.
    const usage = { inputTokens: 0, outputTokens: 0 };
    for (const event of await s.journal(editId)) {
      if (event.type === 'assistant/message' && event.data.usage) {
        usage.inputTokens += event.data.usage.inputTokens ?? 0;
        usage.outputTokens += event.data.usage.outputTokens ?? 0;
      }
    }
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(cells[4]).toBe(priced(usage));
    expect(cells[5]).not.toBe('');
    expect(await page.locator(`tr[data-session-id="${dshId}"]`).count()).toBe(1);
    // Keyboard only: Tab to the session's link and open it with Enter.
    await row.getByRole('link').focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?session=/);
    expect(new URL(page.url()).searchParams.get('session')).toBe(editId);
    await page.close();
  });
});

describe('a session written by Harness', { timeout: 60_000 }, () => {
  it('shows the prompt, the reply as markdown, reasoning collapsed, the tool call with its approval and the diff of its edit', async () => {
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${editId}`);
    const turn = page.locator('article.turn[data-turn="1"]');
    await turn.getByText('completed', { exact: true }).waitFor();
    await expect.poll(() => page.locator('section.session').getAttribute('data-stream')).toBe('open');

    const user = turn.locator('.item.msg.user').first();
    expect(await user.innerText()).toContain('Please edit the greeting in notes.md');
    const replies = turn.locator('.item.msg.assistant');
    expect(await replies.count()).toBe(2);
    // Markdown rendered: **edit** is bold, `notes.md` is code.
    expect(await replies.nth(0).locator('.md strong').innerText()).toBe('edit');
    expect(await replies.nth(0).locator('.md code').innerText()).toBe('notes.md');
    expect(await replies.nth(1).locator('.md em').innerText()).toBe('hello viewer');
    // Reasoning is there, collapsed.
    const reasoning = replies.nth(0).locator('details.reasoning');
    expect(await reasoning.evaluate((d) => (d as { open: boolean }).open)).toBe(false);
    expect(await reasoning.locator('pre').isVisible()).toBe(false);
    await reasoning.locator('summary').click();
    expect(await reasoning.locator('pre').innerText()).toBe('The user wants the greeting changed; edit_file does it.');

    const tool = turn.locator('.item.tool');
    expect(await tool.count()).toBe(1);
    expect(await tool.locator('code.name').innerText()).toBe('edit_file');
    expect(await tool.locator('[data-decision]').getAttribute('data-decision')).toBe('allow');
    expect(await tool.locator('[data-decision]').innerText()).toMatch(/^allowed/);
    expect(await tool.locator('.args').innerText()).toContain('"old_string": "hello world"');
    // The result's unified diff, drawn as a diff: the removed and the added line.
    const diff = tool.locator('.result pre.diff');
    expect(await diff.locator('.del').allInnerTexts()).toContain('-hello world\n');
    expect(await diff.locator('.add').allInnerTexts()).toContain('+hello viewer\n');
    expect(await tool.locator('.result').innerText()).toContain('Edited notes.md: replaced 1 occurrence.');
    // Usage per turn and in total.
    expect(await turn.locator('h3 .usage').innerText()).toMatch(/tokens/);
    expect(await page.locator('[data-total-usage]').innerText()).toMatch(/^\d[\d,]* tokens/);
    const cost = await page.locator('[data-total-cost]').innerText();
    expect(cost).toMatch(/^\$\d+\.\d{2}$/);
    expect(await turn.locator('h3 .cost').innerText()).toBe(cost); // one turn: its cost is the total

    // The raw events of an item, on demand.
    const raw = tool.locator('details.raw');
    await raw.locator('summary').focus();
    await page.keyboard.press('Enter');
    const json = await raw.locator('pre.json').innerText();
    expect(json).toContain('"type": "tool/call"');
    expect(json).toContain('"type": "approval/decided"');
    expect(json).toContain('"type": "tool/result"');

    await page.screenshot({ path: screenshotPath('harness-session.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the scrubber at a mid-turn seq shows the messages `harness replay --at` shows for that seq', async () => {
    const events = await s.journal(editId);
    // Mid-turn: right after the tool's result, before the second model call.
    const mid = events.find((event) => event.type === 'tool/result')!.seq;
    const last = events.at(-1)!.seq;
    const replay = await cli(['replay', editId, '--at', String(mid), '--json'], { home: s.harness.dataDir });
    expect(replay.code, replay.stderr).toBe(0);
    const expected = JSON.parse(replay.stdout).state as { messages: { id: string; role: string; content: { type: string; text?: string }[] }[]; openTurn?: unknown };
    expect(expected.openTurn).toBeDefined();
    expect(expected.messages.length).toBe(3); // the prompt, the first reply, the tool's result

    const { page } = await browser.page();
    await openViewer(page, s.url, `?session=${editId}&at=${mid}`);
    const at = page.locator(`section.at[data-at="${mid}"]`);
    await at.waitFor();
    const shown = await at
      .locator('[data-message-id]')
      .evaluateAll((nodes) => nodes.map((node) => ({ id: node.getAttribute('data-message-id'), role: node.getAttribute('data-role'), text: (node as { innerText: string }).innerText })));
    expect(shown.map(({ id, role }) => ({ id, role }))).toEqual(expected.messages.map(({ id, role }) => ({ id, role })));
    for (const [index, message] of expected.messages.entries()) {
      for (const block of message.content) if (block.type === 'text' && block.text) expect(shown[index]!.text).toContain(block.text.replace(/\*\*|`/g, ''));
    }
    expect(await at.innerText()).toContain('turn 1 open');

    // The scrubber by keyboard: one step right is seq mid + 1, in the URL and on the page.
    const range = page.getByRole('slider', { name: 'Seq' });
    await range.focus();
    await page.keyboard.press('ArrowRight');
    await page.locator(`section.at[data-at="${mid + 1}"]`).waitFor();
    expect(new URL(page.url()).searchParams.get('at')).toBe(String(mid + 1));
    await page.keyboard.press('End');
    await page.locator('.timeline article.turn').first().waitFor();
    expect(new URL(page.url()).searchParams.get('at')).toBeNull();
    expect(Number(await page.locator('section.session').getAttribute('data-last-seq'))).toBe(last);
    await page.close();
  });
});

describe('an imported DeepSeek Harness session', { timeout: 60_000 }, () => {
  it('shows its messages, its tool calls and the diff of its edit', async () => {
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${dshId}`);
    const turn = page.locator('article.turn[data-turn="1"]');
    await turn.locator('.item.tool').nth(1).waitFor();
    expect(await turn.locator('.item.msg.user').first().innerText()).toContain('config.txt');
    const tools = turn.locator('.item.tool');
    expect(await tools.locator('code.name').allInnerTexts()).toEqual(['read', 'edit']);
    expect(await tools.nth(0).locator('.result').innerText()).toContain('1: mode=DEBUG');
    const diff = tools.nth(1).locator('.args pre.diff');
    expect(await diff.locator('.del').allInnerTexts()).toEqual(expect.arrayContaining([expect.stringContaining('DEBUG')]));
    expect(await diff.locator('.add').allInnerTexts()).toEqual(expect.arrayContaining([expect.stringContaining('RELEASE')]));
    expect(await tools.nth(1).locator('.result').innerText()).toContain('has been updated successfully');
    const last = turn.locator('.item.msg.assistant').last();
    expect(await last.locator('.md').innerText()).toBe('DONE');
    expect(await last.locator('details.reasoning').evaluate((d) => (d as { open: boolean }).open)).toBe(false);
    await page.screenshot({ path: screenshotPath('dsh-session.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe('marked events', { timeout: 60_000 }, () => {
  it('shows a retry and a compaction (imported DeepSeek Harness sessions) as marked events', async () => {
    const retry = (await writeImportedSession(join(dshRoot, 'acp-agent', 'empty-response-retry', 'session.jsonl'), { dataDir: s.harness.dataDir, id: 'dsh-retry' })).header.id;
    const compaction = (await writeImportedSession(join(dshRoot, 'headless-agent', 'compaction-recovery', 'session.jsonl'), { dataDir: s.harness.dataDir, id: 'dsh-compaction' })).header.id;
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${retry}`);
    const marker = page.locator('.item.marker[data-tone="retry"]');
    await marker.waitFor();
    expect(await marker.innerText()).toMatch(/retry 1\/\d+ after \d+ ms/);
    // The failed attempt and the retried reply are two items; only the second is the message. The
    // marker can show before the reply's own assistant/message has loaded (a loaded machine): wait for it.
    await expect.poll(() => page.locator('.item.msg.assistant').last().getAttribute('data-live'), { timeout: 15_000 }).toBeNull();
    await openViewer(page, s.url, `?session=${compaction}`);
    await page.locator('.item.marker[data-tone="compaction"]').first().waitFor();
    const labels = await page.locator('.item.marker[data-tone="compaction"] .who').allInnerTexts();
    expect(labels.some((label) => label.includes('compaction started'))).toBe(true);
    expect(labels.some((label) => label.includes('compaction summary'))).toBe(true);
    expect(labels.some((label) => label.includes('compaction compacted'))).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows plugin reloads — between turns, failed, and in the middle of a streamed reply — as marked events', async () => {
    // A harness of its own on the same data directory: its reloads are journaled only in its session.
    const h = await createHarness({
      dataDir: s.harness.dataDir,
      config: {
        defaults: { provider: 'scripted', model: 'scripted-default' },
        plugins: [{ module: plugin('llm-scripted'), config: { paceMs: 10, fragmentChars: 4 } }, { module: plugin('token-meter') }],
      },
    });
    let id: string;
    try {
      const session = await h.createSession({ cwd: s.workspace });
      id = session.id;
      await session.runToEnd('Say something');
      await h.host.reload('llm-scripted');
      await expect(h.host.reload('token-meter', { config: { prices: 'not a price table' } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
      let reloading: Promise<unknown> | undefined;
      for await (const event of session.run('Say more')) {
        if (reloading === undefined && event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta') reloading = h.host.reload('llm-scripted');
      }
      await reloading;
      await session.close();
    } finally {
      await h.dispose();
    }
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${id}`);
    await page.locator('.item.marker[data-tone="reload"]').first().waitFor();
    const labels = await page.locator('.item.marker[data-tone="reload"]').allInnerTexts();
    expect(labels).toHaveLength(3);
    expect(labels[0]).toMatch(/reloaded llm-scripted \(generation 2, [\d.]+ ms\)/);
    expect(labels[1]).toContain('reload of token-meter failed (generation 1 still serving)');
    expect(labels[1]).toContain('INVALID_CONFIG');
    expect(labels[2]).toMatch(/reloaded llm-scripted \(generation 3, [\d.]+ ms\)/);
    // The one that came mid-reply sits in the step it happened in; the others between the turns.
    expect(await page.locator('.turn[data-turn="2"] .step[data-step="1"] .item.marker[data-tone="reload"]').count()).toBe(1);
    expect(await page.locator('.turn[data-turn="1"] .item.marker[data-tone="reload"]').count()).toBe(2);
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe('safety', { timeout: 60_000 }, () => {
  it('renders an XSS corpus in tool output, arguments and markdown as inert text', async () => {
    const id = await runTurn(s, 'xss please');
    const { page, dialogs, errors } = await browser.page();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await openViewer(page, s.url, `?session=${id}`);
    const turn = page.locator('article.turn[data-turn="1"]');
    await turn.getByText('completed', { exact: true }).waitFor();
    const tool = turn.locator('.item.tool');
    // The hostile text is visible, character for character, as text.
    expect(await tool.locator('.result pre').first().innerText()).toBe(XSS);
    expect(await tool.locator('.args').innerText()).toContain('<script>alert(\\"args\\")</script>');
    const reply = turn.locator('.item.msg.assistant').first().locator('.md');
    expect(await reply.innerText()).toContain('<script>window.__xss = "md-script"</script>');
    // Links: only http(s)/mailto keep an href.
    const hrefs = await reply.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
    expect(hrefs).toContain('https://example.com/docs');
    expect(hrefs.filter((href) => href !== null && !/^(https?:|mailto:)/.test(href))).toEqual([]);
    expect(await reply.innerText()).toContain('javascript link');
    // Nothing ran: no dialog, no flag set, no script or handler attribute in the page's content.
    await reply.getByText('javascript link').click();
    await page.waitForTimeout(200);
    expect(dialogs).toEqual([]);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
    expect(await page.locator('#app script, #app iframe, #app img, #app svg').count()).toBe(0);
    expect(
      await page.locator('#app *').evaluateAll((nodes) => nodes.filter((el) => [...(el as { attributes: Iterable<{ name: string }> }).attributes].some((a) => a.name.startsWith('on'))).length),
    ).toBe(0);
    // The same in the state view of the scrubber.
    await openViewer(page, s.url, `?session=${id}&at=${(await s.journal(id)).at(-1)!.seq - 1}`);
    await page.locator('section.at').waitFor();
    expect(await page.locator('section.at').innerText()).toContain('<img src=x onerror=');
    expect(await page.locator('#app script, #app iframe, #app img, #app svg').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(violations).toEqual([]);
    await page.close();
  });
});
