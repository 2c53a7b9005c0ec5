/**
 * The viewer on a live session over `harness serve`'s API (issue 19, "Live"): a turn submitted from
 * the page's prompt box streams into the page chunk by chunk; after the server drops every
 * connection mid-turn the page reconnects with Last-Event-ID and ends with each event exactly once;
 * a pending approval shows the whole call with Allow/Deny, and Allow (by keyboard) lets the turn
 * finish with the decision journaled; Abort ends a running turn `aborted`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureViewerBuilt, launchBrowser, openViewer, screenshotPath, serveViewer, type Browser, type Served } from './support.ts';

let s: Served;
let browser: Browser;
beforeAll(async () => {
  ensureViewerBuilt();
  s = await serveViewer({ paceMs: 25 });
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

const LONG_TEXT = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

/** Records, in the page, the text of the streaming reply each time it changes. */
const recordLiveText = `(() => {
  window.__seen = [];
  new MutationObserver(() => {
    const live = document.querySelector('[data-live] .md');
    if (live) {
      const text = live.textContent;
      if (window.__seen.at(-1) !== text) window.__seen.push(text);
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
})()`;

describe('live', { timeout: 90_000 }, () => {
  it('a turn submitted from the prompt box appears chunk by chunk, then as the finished reply', async () => {
    const { id } = await s.turns.createSession({ cwd: s.workspace });
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${id}`);
    await page.locator('section.session[data-stream="open"]').waitFor();
    await page.evaluate(recordLiveText);
    await page.getByLabel('Prompt').fill('a long answer please');
    await page.keyboard.press('Control+Enter');
    const turn = page.locator('article.turn[data-turn="1"]');
    await turn.getByText('completed', { exact: true }).waitFor();
    const seen = (await page.evaluate('window.__seen')) as string[];
    // Many partial texts, each a longer prefix of the reply, before the finished one.
    const partial = seen.filter((text) => text.length > 0 && text.length < LONG_TEXT.length);
    expect(partial.length).toBeGreaterThanOrEqual(5);
    for (const [index, text] of partial.entries()) {
      expect(LONG_TEXT.startsWith(text.trim())).toBe(true);
      if (index > 0) expect(text.length).toBeGreaterThanOrEqual(partial[index - 1]!.length);
    }
    expect(await turn.locator('.item.msg.assistant .md').innerText()).toBe(LONG_TEXT);
    expect(await page.locator('[data-live]').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('reconnects after the server drops the stream mid-turn, without losing or repeating an event', async () => {
    const { id } = await s.turns.createSession({ cwd: s.workspace });
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${id}`);
    const session = page.locator('section.session');
    await page.locator('section.session[data-stream="open"]').waitFor();
    const { turn } = await s.turns.submitTurn(id, { prompt: 'long again' });
    await page.locator('[data-live]').waitFor();
    // Every connection of the server, the event stream's included, is cut.
    s.app.server.closeAllConnections();
    await expect.poll(() => session.getAttribute('data-stream'), { timeout: 10_000 }).not.toBe('open');
    const seenAtDrop = Number(await session.getAttribute('data-last-seq'));
    await s.turns.turnEnd(id, turn);
    const events = await s.journal(id);
    const last = events.at(-1)!.seq;
    expect(seenAtDrop).toBeLessThan(last); // the drop came mid-turn: what followed came over the new connection
    await expect.poll(() => session.getAttribute('data-last-seq'), { timeout: 20_000 }).toBe(String(last));
    expect(await session.getAttribute('data-stream')).toBe('open');
    // Each event once: as many as the journal has, the reply whole, one user and one assistant message.
    expect(Number(await session.getAttribute('data-event-count'))).toBe(events.length);
    const t = page.locator('article.turn[data-turn="1"]');
    await t.getByText('completed', { exact: true }).waitFor();
    expect(await t.locator('.item.msg.assistant').count()).toBe(1);
    expect(await t.locator('.item.msg.user').count()).toBe(1);
    expect(await t.locator('.item.msg.assistant .md').innerText()).toBe(LONG_TEXT);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a pending approval shows the whole call with Allow and Deny; Allow lets the turn finish and the decision is journaled', async () => {
    const { id } = await s.turns.createSession({ cwd: s.workspace });
    const { page, errors } = await browser.page();
    await openViewer(page, s.url, `?session=${id}`);
    await page.locator('section.session[data-stream="open"]').waitFor();
    await page.getByLabel('Prompt').fill('poke the value');
    await page.getByRole('button', { name: 'Send' }).click();
    const tool = page.locator('.item.tool.pending');
    await tool.waitFor();
    expect(await page.getByLabel('Prompt').inputValue()).toBe(''); // the submitted prompt left the box
    expect(await tool.locator('code.name').innerText()).toBe('poke');
    expect(await tool.locator('.args').innerText()).toContain('"key": "k"');
    expect(await tool.locator('.args').innerText()).toContain('"value": "v"');
    expect(await tool.getByText('waiting for approval').count()).toBe(1);
    expect(s.ran).not.toContain('poke:k=v');
    await page.screenshot({ path: screenshotPath('pending-approval.png'), fullPage: true });
    // The session list marks the session live while its turn runs.
    const list = await browser.page();
    await openViewer(list.page, s.url);
    await list.page.locator(`tr[data-session-id="${id}"] [data-live]`).waitFor();
    expect(await list.page.locator(`tr[data-session-id="${id}"] [data-live]`).innerText()).toContain('live (turn 1)');
    await list.page.close();
    // Keyboard only: focus Allow and press Enter.
    await tool.getByRole('button', { name: 'Allow' }).focus();
    await page.keyboard.press('Enter');
    const turn = page.locator('article.turn[data-turn="1"]');
    await turn.getByText('completed', { exact: true }).waitFor();
    expect(await turn.locator('.item.msg.assistant .md').last().innerText()).toBe('Poked.');
    expect(await turn.locator('.item.tool [data-decision]').getAttribute('data-decision')).toBe('allow');
    expect(await page.getByRole('button', { name: 'Allow' }).count()).toBe(0);
    expect(s.ran).toContain('poke:k=v');
    const decided = (await s.journal(id)).filter((event) => event.type === 'approval/decided');
    expect(decided).toHaveLength(1);
    expect(decided[0]!.data).toMatchObject({ decision: 'allow', callId: expect.any(String) });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('Deny answers no, and Abort ends a running turn as aborted', async () => {
    const { id } = await s.turns.createSession({ cwd: s.workspace });
    const { page } = await browser.page();
    await openViewer(page, s.url, `?session=${id}`);
    await page.locator('section.session[data-stream="open"]').waitFor();
    await page.getByLabel('Prompt').fill('poke once more');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.item.tool.pending').waitFor();
    await page.getByRole('button', { name: 'Deny' }).click();
    const first = page.locator('article.turn[data-turn="1"]');
    await first.getByText('completed', { exact: true }).waitFor();
    expect(await first.locator('.item.tool [data-decision]').getAttribute('data-decision')).toBe('deny');

    await page.getByLabel('Prompt').fill('long and then abort');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-live]').waitFor();
    await page.getByRole('button', { name: 'Abort' }).click();
    const second = page.locator('article.turn[data-turn="2"]');
    await second.getByText('aborted', { exact: true }).waitFor();
    const end = (await s.journal(id)).filter((event) => event.type === 'turn/end').at(-1)!;
    expect(end.data).toMatchObject({ turn: 2, reason: 'aborted' });
    await page.close();
  });
});
