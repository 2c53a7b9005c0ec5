/**
 * The `harness serve` command as a user runs it: a generated token printed at start, 127.0.0.1 by
 * default, a store it cannot open (unreachable, or of no registered scheme) refused without echoing its credentials, SIGTERM ending a running
 * turn as `aborted` and releasing the journal.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkToken } from '../../plugins/serve/index.ts';
import { readJournal, type AnySessionEvent } from '../../runtime/index.ts';
import { journalPath } from '../../runtime/internal.ts';
import { bin, cleanEnv, harness, tempDir } from '../cli/support.ts';

const home = tempDir('serve-cli');
afterAll(() => home.cleanup());

describe('harness serve', { timeout: 60_000 }, () => {
  it('prints a generated token, listens on 127.0.0.1, and on SIGTERM aborts the running turn and exits', async () => {
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--cwd', home.dir], { env: cleanEnv({ HARNESS_HOME: home.dir }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const { url, token } = await new Promise<{ url: string; token: string }>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const u = /listening on (http:\/\/\S+)/.exec(out);
        const t = /^token: (\S+)$/m.exec(out);
        if (u && t) resolve({ url: u[1]!, token: t[1]! });
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(token.length).toBeGreaterThanOrEqual(32);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    expect((await fetch(`${url}/v1/sessions`)).status).toBe(401);
    const created = (await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers, body: '{}' })).json()) as { session: { id: string } };
    const id = created.session.id as string;
    // The default config's scripted model is paced: the turn is still streaming when SIGTERM comes.
    const submitted = await fetch(`${url}/v1/sessions/${id}/turns`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'What is in this workspace?' }) });
    expect(submitted.status).toBe(202);
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    const events: AnySessionEvent[] = [];
    const path = journalPath(id, join(home.dir));
    for await (const event of readJournal(path)) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } });
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('refuses a store it cannot open, without echoing its password', async () => {
    // Nothing listens on port 1: the PostgreSQL store cannot be reached.
    const result = await harness(['serve', '--port', '0', '--store', 'postgres://admin:s3cret@127.0.0.1:1/harness'], { home: home.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error STORE_UNAVAILABLE');
    expect(result.stderr).toContain('postgres://admin:***@127.0.0.1:1/harness');
    expect(result.stderr + result.stdout).not.toContain('s3cret');
    const other = await harness(['serve', '--port', '0', '--store', 'mysql://u:hunter22@x/y'], { home: home.dir });
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('error UNKNOWN_STORE');
    expect(other.stderr).not.toContain('hunter22');
  });

  it('refuses a $HARNESS_SERVE_TOKEN shorter than 16 characters, naming the variable and the rule, not the config', async () => {
    const result = await harness(['serve', '--port', '0'], { home: home.dir, env: { HARNESS_SERVE_TOKEN: 'short' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'error INVALID_SERVE_TOKEN: $HARNESS_SERVE_TOKEN is 5 characters; a serve token must be at least 16. Set it to a longer secret (openssl rand -hex 24), or unset it to have one generated and printed.',
    );
    expect(result.stderr).not.toMatch(/config/i);
    expect(result.stderr).not.toContain('short');
  });

  it("an embedder's short token option is refused by the option's name", () => {
    expect(() => checkToken('short-token')).toThrow(
      expect.objectContaining({ code: 'INVALID_SERVE_TOKEN', message: 'The token option is 11 characters; a serve token must be at least 16. Pass a longer secret, or none to have one generated.' }),
    );
    expect(checkToken('a-token-of-16-ch')).toBe('a-token-of-16-ch');
  });
});
