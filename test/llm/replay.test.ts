/**
 * Replay-state read discipline (DESIGN "ctx.llm", seed 002 14.3 "回放状态的读侧纪律", issue #3
 * "Deliver 7"): replay state the target adapter cannot use is dropped from that message only,
 * reported once through `onReplayDegrade` and `kernel/diagnostic`, and the request goes on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  createAssistantMessage,
  createToolResultMessage,
  createUserMessage,
  type AssistantMessage,
  type Diagnostic,
  type Harness,
  type Message,
  type ReplayDegradeReport,
  type ReplayEnvelope,
} from '../../runtime/index.ts';
import { FakeAdapter, collect, diagnostics, harnessWith } from './support.ts';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

class ReplayAdapter extends FakeAdapter {
  override readonly replayFormat = { kind: 'fake', version: 2 };
  readonly reports: ReplayDegradeReport[] = [];
  override validateReplayState(envelope: ReplayEnvelope): string | undefined {
    const response = envelope.response as { bad?: boolean; explode?: boolean };
    if (response.explode) throw new Error('cannot parse');
    return response.bad ? 'signature missing' : undefined;
  }
  override onReplayDegrade(report: ReplayDegradeReport): void {
    this.reports.push(report);
  }
}

const env = (response: Record<string, unknown>, blocks?: unknown[]): ReplayEnvelope => (blocks === undefined ? { response } : { response, blocks });
const reply = (id: string, provider: string, replayState: ReplayEnvelope | null) =>
  createAssistantMessage({
    id,
    provider,
    model: 'm',
    content: [
      { type: 'reasoning', text: 'thought' },
      { type: 'text', text: `answer ${id}` },
    ],
    replayState: replayState as ReplayEnvelope,
  });

function conversation(): Message[] {
  return [
    createUserMessage('hello', { id: 'u0' }),
    reply('other-kind', 'fake', env({ kind: 'openai-chat', version: 2 }, [1, 2])),
    reply('other-provider', 'elsewhere', env({ kind: 'fake', version: 2 }, [1, 2])),
    reply('other-version', 'fake', env({ kind: 'fake', version: 1 }, [1, 2])),
    reply('misaligned', 'fake', env({ kind: 'fake', version: 2 }, [1, 2, 3])),
    reply('malformed', 'fake', env({ kind: 'fake', version: 2, bad: true }, [1, 2])),
    reply('valid', 'fake', env({ kind: 'fake', version: 2, id: 'resp_1' }, [{ sig: 'a' }, { sig: 'b' }])),
    reply('valid-no-blocks', 'fake', env({ kind: 'fake', version: 2 })),
    createToolResultMessage({ id: 't0', callId: 'c1', content: 'ok' }),
    createAssistantMessage({ id: 'plain', provider: 'fake', model: 'm', content: 'no state' }),
  ];
}

const DEGRADED = ['other-kind', 'other-provider', 'other-version', 'misaligned', 'malformed'];

async function serve(adapter: FakeAdapter): Promise<{ harness: Harness; seen: Diagnostic[] }> {
  harness = await harnessWith();
  harness.ctx.llm.registerAdapter(['fake'], adapter);
  return { harness, seen: diagnostics(harness) };
}

describe('replay degrade', () => {
  it('sends unusable replay state nowhere, keeps every other message (same object), reports each once', async () => {
    const adapter = new ReplayAdapter();
    const { seen } = await serve(adapter);
    const messages = conversation();
    const chunks = await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
    expect(chunks).toEqual([{ type: 'finish', finish: { kind: 'stop' } }]);

    const sent = adapter.calls[0]!.messages;
    expect(sent).toHaveLength(messages.length);
    for (const [i, message] of messages.entries()) {
      if (DEGRADED.includes(message.id)) {
        const original = message as AssistantMessage;
        expect(sent[i]).not.toBe(message);
        const { replayState: _, ...source } = original.source;
        expect(sent[i]).toEqual({ id: original.id, role: 'assistant', content: original.content, source });
        expect('replayState' in sent[i]!.source).toBe(false);
        expect(sent[i]!.content).toBe(original.content);
        expect(Object.isFrozen(sent[i])).toBe(true);
        expect(Object.isFrozen(sent[i]!.source)).toBe(true);
        // The stored message is untouched: stored content is authoritative, its state stays on disk.
        expect(original.source.replayState).toBeDefined();
      } else {
        expect(sent[i]).toBe(message);
      }
    }

    const reasons: Record<string, ReplayDegradeReport['reason']> = {
      'other-kind': 'other-kind',
      'other-provider': 'other-provider',
      'other-version': 'other-version',
      misaligned: 'misaligned',
      malformed: 'malformed',
    };
    expect(adapter.reports.map((r) => [r.messageId, r.reason])).toEqual(DEGRADED.map((id) => [id, reasons[id]]));
    for (const report of adapter.reports) {
      expect(report).toEqual({
        provider: 'fake',
        model: 'm',
        messageId: report.messageId,
        reason: report.reason,
        failure: {
          code: 'INVALID_REPLAY_STATE',
          message: expect.stringContaining(`Replay state of message ${report.messageId} was not sent to provider "fake"`),
          messageId: report.messageId,
          reason: report.reason,
        },
      });
      expect(Object.isFrozen(report.failure)).toBe(true);
    }
    expect(adapter.reports.find((r) => r.messageId === 'malformed')!.failure.message).toContain('signature missing');
    expect(adapter.reports.find((r) => r.messageId === 'misaligned')!.failure.message).toContain('3 block entries for 2 blocks');

    const replayDiagnostics = seen.filter((d) => d.code === 'INVALID_REPLAY_STATE');
    expect(replayDiagnostics).toHaveLength(5);
    expect(replayDiagnostics.map((d) => [d.level, d.source])).toEqual(DEGRADED.map(() => ['warning', 'llm:fake']));
    expect(replayDiagnostics.map((d) => d.message)).toEqual(adapter.reports.map((r) => r.failure.message));

    // The same messages in the next request: degraded again, reported no more.
    await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
    expect('replayState' in adapter.calls[1]!.messages[1]!.source).toBe(false);
    expect(adapter.calls[1]!.messages[6]).toBe(messages[6]);
    expect(adapter.reports).toHaveLength(5);
    expect(seen.filter((d) => d.code === 'INVALID_REPLAY_STATE')).toHaveLength(5);
  });

  it('a request with only usable replay state passes the options object itself', async () => {
    const adapter = new ReplayAdapter();
    await serve(adapter);
    const messages = conversation().filter((m) => !DEGRADED.includes(m.id));
    const options = { provider: 'fake', model: 'm', messages };
    await collect(harness!.llm.stream(options));
    expect(adapter.calls[0]).toBe(options);
    expect(adapter.reports).toEqual([]);
  });

  it('an adapter that reads no replay state gets none', async () => {
    const adapter = new FakeAdapter();
    await serve(adapter);
    const messages = [reply('a', 'fake', env({ kind: 'fake', version: 2 }))];
    await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
    expect(adapter.calls[0]!.messages[0]!.source).toEqual({ kind: 'model', provider: 'fake', model: 'm' });
  });

  it('a null envelope (from a JSON journal) or a throwing validateReplayState degrades the message; the request goes on', async () => {
    const adapter = new ReplayAdapter();
    await serve(adapter);
    const messages = [reply('null', 'fake', null), reply('explode', 'fake', env({ kind: 'fake', version: 2, explode: true })), reply('ok', 'fake', env({ kind: 'fake', version: 2 }))];
    const chunks = await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
    expect(chunks).toEqual([{ type: 'finish', finish: { kind: 'stop' } }]);
    const sent = adapter.calls[0]!.messages;
    expect('replayState' in sent[0]!.source).toBe(false);
    expect('replayState' in sent[1]!.source).toBe(false);
    expect(sent[2]).toBe(messages[2]);
    expect(adapter.reports.map((r) => [r.messageId, r.reason])).toEqual([
      ['null', 'malformed'],
      ['explode', 'malformed'],
    ]);
    expect(adapter.reports[1]!.failure.message).toContain('cannot parse');
  });

  it('an onReplayDegrade that throws is contained and reported; the request goes on', async () => {
    const adapter = new ReplayAdapter();
    adapter.onReplayDegrade = () => {
      throw new Error('observer bug');
    };
    const { seen } = await serve(adapter);
    const chunks = await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: [reply('x', 'fake', env({ kind: 'other', version: 2 }))] }));
    expect(chunks).toEqual([{ type: 'finish', finish: { kind: 'stop' } }]);
    expect(seen.map((d) => d.code)).toEqual(['OBSERVER_FAILED', 'INVALID_REPLAY_STATE']);
  });

  describe('across the requests of a conversation (a long session sends its whole history each time)', () => {
    class CountingAdapter extends ReplayAdapter {
      validated = 0;
      override validateReplayState(envelope: ReplayEnvelope): string | undefined {
        this.validated++;
        return super.validateReplayState(envelope);
      }
    }
    const stateless = (message: Message): Message => {
      const { replayState: _, ...source } = (message as AssistantMessage).source;
      return { ...message, source } as Message;
    };

    it('reads only the messages after the earlier request’s; the kept ones are sent as before (the same copies)', async () => {
      const adapter = new CountingAdapter();
      await serve(adapter);
      const first = conversation();
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: first }));
      const validatedFirst = adapter.validated;
      expect(validatedFirst).toBe(3); // malformed, valid, valid-no-blocks: the others fail before the adapter's check
      const second = [...first, reply('later-bad', 'fake', env({ kind: 'fake', version: 2, bad: true }, [1, 2])), reply('later-ok', 'fake', env({ kind: 'fake', version: 2 }, [1, 2]))];
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: second }));
      expect(adapter.validated - validatedFirst).toBe(2);
      const [sent1, sent2] = [adapter.calls[0]!.messages, adapter.calls[1]!.messages];
      for (let i = 0; i < first.length; i++) expect(sent2[i]).toBe(sent1[i]);
      expect(sent2[first.length]).toEqual(stateless(second[first.length]!));
      expect(sent2[first.length + 1]).toBe(second[first.length + 1]);
      expect(adapter.reports.map((r) => r.messageId)).toEqual([...DEGRADED, 'later-bad']);
    });

    it('a message replaced in the middle is judged anew, and so is everything after it', async () => {
      const adapter = new ReplayAdapter();
      await serve(adapter);
      const first = conversation();
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: first }));
      const index = first.findIndex((m) => m.id === 'malformed');
      // A middleware rewrites the malformed message into a valid one (same id), and one before it into a bad one.
      const second = first.slice();
      second[index] = reply('malformed', 'fake', env({ kind: 'fake', version: 2 }, [1, 2]));
      const valid = first.findIndex((m) => m.id === 'valid');
      second[valid] = reply('valid', 'fake', env({ kind: 'fake', version: 2, bad: true }, [1, 2]));
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: second }));
      const sent = adapter.calls[1]!.messages;
      expect(sent[index]).toBe(second[index]);
      expect(sent[valid]).toEqual(stateless(second[valid]!));
      for (const id of DEGRADED.filter((d) => d !== 'malformed')) {
        const i = first.findIndex((m) => m.id === id);
        expect(sent[i]).toEqual(stateless(first[i]!));
      }
      // A shorter request (a message dropped at the end) keeps the verdicts of what it shares.
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: second.slice(0, index + 1) }));
      expect(adapter.calls[2]!.messages).toEqual(sent.slice(0, index + 1));
    });

    it('another model on the same route is judged for itself', async () => {
      const adapter = new ReplayAdapter();
      await serve(adapter);
      const messages = conversation();
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
      await collect(harness!.llm.stream({ provider: 'fake', model: 'other', messages }));
      const sent = adapter.calls[1]!.messages;
      for (const [i, message] of messages.entries()) {
        if (message.source.kind === 'model' && message.source.replayState !== undefined) expect('replayState' in sent[i]!.source).toBe(false);
        else expect(sent[i]).toBe(message);
      }
      // Every message of provider "fake" was made by model m; the other-provider one was reported for that reason already.
      expect(adapter.reports.filter((r) => r.model === 'other').map((r) => r.reason)).toEqual(Array(6).fill('other-model'));
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
      expect(adapter.calls[2]!.messages).toEqual(adapter.calls[0]!.messages);
    });

    it('a list changed in place between requests (a middleware reusing its array) is judged by what it holds now', async () => {
      const adapter = new ReplayAdapter();
      await serve(adapter);
      const messages = conversation();
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
      const index = messages.findIndex((m) => m.id === 'malformed');
      messages[index] = reply('malformed', 'fake', env({ kind: 'fake', version: 2 }, [1, 2]));
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
      expect(adapter.calls[1]!.messages[index]).toBe(messages[index]);
    });

    it('a message that is not frozen is read again at every request', async () => {
      const adapter = new ReplayAdapter();
      await serve(adapter);
      const head = createUserMessage('hello', { id: 'u0' });
      const mutable = {
        id: 'm1',
        role: 'assistant',
        content: [{ type: 'text', text: 'x' }],
        source: { kind: 'model', provider: 'fake', model: 'm', replayState: env({ kind: 'fake', version: 2, bad: true }) },
      } as unknown as Message;
      const messages = [head, mutable];
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
      expect('replayState' in adapter.calls[0]!.messages[1]!.source).toBe(false);
      (mutable.source as { replayState: unknown }).replayState = env({ kind: 'fake', version: 2 });
      await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages }));
      expect(adapter.calls[1]!.messages[1]).toBe(mutable);
    });
  });
});
