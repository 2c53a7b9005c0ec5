/**
 * Cookbook: `harness serve` — sessions over HTTP and Server-Sent Events, driven with fetch.
 * Starts the real command (the project's config, the offline scripted model), creates a session,
 * submits a turn, answers its approval, and follows its events live over SSE.
 * Run: npx tsx cookbook/serve.ts
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/harness.js', import.meta.url));
const demo = fileURLToPath(new URL('demo-workspace', import.meta.url));

export async function main() {
  const home = mkdtempSync(join(tmpdir(), 'harness-cookbook-serve-'));
  const workspace = join(home, 'workspace');
  cpSync(demo, workspace, { recursive: true });
  const token = 'cookbook-token-0123456789'; // or leave HARNESS_SERVE_TOKEN unset: serve prints a generated one
  // 1. Start the server: 127.0.0.1, a free port, sessions in $HARNESS_HOME; every call is asked.
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--cwd', workspace, '--approve', 'always-ask'], {
    env: { ...process.env, HARNESS_HOME: home, HARNESS_SERVE_TOKEN: token, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (text: string) => {
        out += text;
        const match = /listening on (http:\/\/\S+)/.exec(out);
        if (match) resolve(match[1]!);
      });
      child.on('exit', (code) => reject(new Error(`harness serve exited (${code})`)));
    });
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as any };
    };

    // 2. A session, and a turn: the answer comes at once with the turn's first seq.
    const { body: created } = await api('POST', '/v1/sessions', { title: 'a look around' });
    const id: string = created.session.id;
    const { status, body: submitted } = await api('POST', `/v1/sessions/${id}/turns`, { prompt: 'What is in this workspace?' });

    // 3. Follow the turn over SSE (fetch can send the bearer header; a browser's EventSource cannot).
    const seen: { seq: number; type: string }[] = [];
    const approvals: string[] = [];
    const response = await fetch(`${url}/v1/sessions/${id}/stream?after=${submitted.turn.startSeq - 1}`, { headers: { authorization: `Bearer ${token}` } });
    const decoder = new TextDecoder();
    let buffer = '';
    let reply = '';
    read: for await (const chunk of response.body!) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame.split('\n').find((line) => line.startsWith('data: '));
        if (!data) continue; // `retry:` and `: ping` lines
        const event = JSON.parse(data.slice(6));
        seen.push({ seq: event.seq, type: event.type });
        // 4. A tool call waits for a person: answer it (exactly once; a second answer is a 409).
        if (event.type === 'approval/requested') {
          const answer = await api('POST', `/v1/sessions/${id}/approvals/${event.data.callId}`, { decision: 'allow' });
          approvals.push(`${event.data.name}: ${answer.status}`);
        }
        if (event.type === 'assistant/message')
          reply = event.data.message.content
            .filter((b: any) => b.type === 'text')
            .map((b: any) => b.text)
            .join('');
        if (event.type === 'turn/end') break read;
      }
    }

    // 5. Read back: the events by seq range, and the state at the end.
    const { body: state } = await api('GET', `/v1/sessions/${id}/state`);
    const { body: list } = await api('GET', '/v1/sessions');
    const unauthorized = (await fetch(`${url}/v1/sessions`)).status;
    return { status, turn: submitted.turn, seen, approvals, reply, turnEnd: state.state.lastTurnEnd, sessions: list.sessions.length, unauthorized };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(home, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await main(), null, 2));
