/**
 * The central close-out (runtime/agent/closeout.ts) with the workspace tools and small custom tools:
 * timeout, head-kept truncation with a marker and the exit code after it, throw → isError, parallel
 * abort, the priority user abort > timeout > throw > the tool's own report, and invalid arguments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, HarnessError, z, type Harness, type ToolContext } from '../../runtime/index.ts';
import { parseToolCall, runTool, type ToolOutcome } from '../../runtime/internal.ts';
import { call, isRunning, loadTools, runWith, tempDir, text, waitFor, type TempDir } from './support.ts';

let harness: Harness;
let ws: TempDir;
beforeAll(async () => {
  harness = await loadTools({ exec: { killGraceMs: 300 } });
  ws = tempDir('closeout');
});
afterAll(async () => {
  await harness.dispose();
  ws.cleanup();
});

const never = () => new Promise<never>(() => {});
const options = (extra: { signal?: AbortSignal; outputs?: string[] } = {}) => ({ cwd: ws.dir, ...extra });

describe('timeout', () => {
  it('a tool that hangs is answered TIMEOUT, and its signal fires with the reason', async () => {
    let seen: ToolContext | undefined;
    const hang = defineTool({
      name: 'hang',
      description: 'Hangs.',
      input: z.object({}),
      permission: 'read',
      timeoutMs: 100,
      execute: (_input, context) => {
        seen = context;
        return never();
      },
    });
    const outcome = await runWith(hang, {}, options());
    expect(outcome.isError).toBe(true);
    expect(outcome.code).toBe('TIMEOUT');
    expect(text(outcome)).toBe('The tool call timed out after 100 ms and was stopped.');
    expect(outcome.durationMs).toBeGreaterThanOrEqual(95);
    expect(outcome.durationMs).toBeLessThan(1000);
    expect(seen!.signal.aborted).toBe(true);
    expect((seen!.signal.reason as HarnessError).code).toBe('TIMEOUT');
  });

  it('a finished call’s signal fires with TOOL_FINISHED (work the tool left running can stop), call after call', async () => {
    const signals: AbortSignal[] = [];
    const quick = defineTool({
      name: 'quick',
      description: 'Answers at once.',
      input: z.object({}),
      permission: 'read',
      execute: (_input, context) => {
        signals.push(context.signal);
        expect(context.signal.aborted).toBe(false);
        return 'done';
      },
    });
    for (let i = 0; i < 3; i++) expect(text(await runWith(quick, {}, options()))).toBe('done');
    expect(new Set(signals).size).toBe(3);
    for (const signal of signals) {
      expect(signal.aborted).toBe(true);
      expect(HarnessError.is(signal.reason)).toBe(true);
      expect((signal.reason as HarnessError).code).toBe('TOOL_FINISHED');
    }
  });

  it('keeps what a hanging generator streamed before the timeout', async () => {
    const partial = defineTool({
      name: 'partial',
      description: 'Streams, then hangs.',
      input: z.object({}),
      permission: 'read',
      timeoutMs: 100,
      async *execute() {
        yield 'first ';
        yield 'second';
        await never();
      },
    });
    const outputs: string[] = [];
    const outcome = await runWith(partial, {}, options({ outputs }));
    expect(outputs).toEqual(['first ', 'second']);
    expect(outcome.code).toBe('TIMEOUT');
    expect(outcome.content).toEqual([
      { type: 'text', text: 'first second' },
      { type: 'text', text: '\n[The tool call timed out after 100 ms and was stopped.]' },
    ]);
  });

  it('a timeout beyond setTimeout’s range, or Infinity, does not fire at once', async () => {
    for (const timeoutMs of [2 ** 31, Infinity]) {
      const slow = defineTool({
        name: 'slow',
        description: 'Takes 50 ms.',
        input: z.object({}),
        permission: 'read',
        timeoutMs,
        execute: async () => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          return 'done';
        },
      });
      const outcome = await runWith(slow, {}, options());
      expect([timeoutMs, outcome.isError, text(outcome)]).toEqual([timeoutMs, false, 'done']);
    }
  });

  it('exec_command under the close-out timeout: TIMEOUT, partial output kept, group killed', async () => {
    const short = await loadTools({ exec: { timeoutMs: 300, killGraceMs: 300 } });
    try {
      const outputs: string[] = [];
      const outcome = await call(short, 'exec_command', { command: 'echo pid:$$; sleep 1000' }, options({ outputs }));
      const pid = Number(/pid:(\d+)/.exec(outputs.join(''))![1]);
      expect(outcome.code).toBe('TIMEOUT');
      expect(text(outcome)).toBe(`pid:${pid}\n\n[The tool call timed out after 300 ms and was stopped.]`);
      expect(await waitFor(() => !isRunning(pid), 3000)).toBe(true);
    } finally {
      await short.dispose();
    }
  });
});

describe('output cap', () => {
  const TEN_MB = 10_000_000;

  it('exec_command printing 10 MB: the head is kept (exactly the cap), a marker says how much was cut, the exit code follows', async () => {
    let streamedCount = 0;
    let pieceCount = 0;
    const outcome = await runTool(
      harness.ctx.tools.require('exec_command'),
      { command: `head -c ${TEN_MB} /dev/zero | tr '\\0' 'a'; exit 3` },
      {
        callId: 'big',
        sessionId: 'session-1',
        cwd: ws.dir,
        onOutput: (piece) => {
          streamedCount += piece.length;
          pieceCount += 1;
        },
      },
    );
    expect(streamedCount).toBe(TEN_MB); // everything was streamed live…
    expect(pieceCount).toBeGreaterThan(1);
    expect(outcome.isError).toBe(true);
    expect(outcome.code).toBe('TOOL_REPORTED_ERROR');
    expect(outcome.content).toHaveLength(2); // …the result keeps the head only
    expect(outcome.content[0]).toEqual({ type: 'text', text: 'a'.repeat(16_000) });
    expect(outcome.content[1]).toEqual({ type: 'text', text: `\n[output truncated: ${TEN_MB - 16_000} more characters were cut; the first 16000 are shown]\n[exit code: 3]` });
  });

  it('`yes | head` with a small configured cap', async () => {
    const small = await loadTools({ maxOutputChars: 10 });
    try {
      const outcome = await call(small, 'exec_command', { command: 'yes | head -n 100000' }, options());
      expect(outcome.isError).toBe(false);
      expect(text(outcome)).toBe(`y\ny\ny\ny\ny\n\n[output truncated: ${200_000 - 10} more characters were cut; the first 10 are shown]\n[exit code: 0]`);
    } finally {
      await small.dispose();
    }
  });

  it('a custom tool returning 10 MB, and a generator yielding it in pieces', async () => {
    const returns = defineTool({ name: 'returns', description: 'Returns 10 MB.', input: z.object({}), permission: 'read', maxOutputChars: 100, execute: () => 'b'.repeat(TEN_MB) });
    const yields = defineTool({
      name: 'yields',
      description: 'Yields 10 MB.',
      input: z.object({}),
      permission: 'read',
      maxOutputChars: 100,
      async *execute() {
        for (let i = 0; i < 100; i++) yield 'c'.repeat(TEN_MB / 100);
      },
    });
    const returned = await runWith(returns, {}, options());
    expect(returned.content).toEqual([
      { type: 'text', text: 'b'.repeat(100) },
      { type: 'text', text: `\n[output truncated: ${TEN_MB - 100} more characters were cut; the first 100 are shown]` },
    ]);
    const yielded = await runWith(yields, {}, options());
    expect(yielded.content).toEqual([
      { type: 'text', text: 'c'.repeat(100) },
      { type: 'text', text: `\n[output truncated: ${TEN_MB - 100} more characters were cut; the first 100 are shown]` },
    ]);
  });

  it('the marker counts everything streamed also when the call is cut short by a timeout', async () => {
    const flood = defineTool({
      name: 'flood',
      description: 'Streams 1 MB, then hangs.',
      input: z.object({}),
      permission: 'read',
      timeoutMs: 100,
      maxOutputChars: 10,
      execute: async (_input, context) => {
        for (let i = 0; i < 10; i++) context.output('d'.repeat(100_000));
        return never();
      },
    });
    const outcome = await runWith(flood, {}, options());
    expect(outcome.code).toBe('TIMEOUT');
    expect(text(outcome)).toBe(`${'d'.repeat(10)}\n[output truncated: ${1_000_000 - 10} more characters were cut]\n[The tool call timed out after 100 ms and was stopped.]`);
  });

  it('a streamed report without content: the streamed text is the output, with its exit code', async () => {
    const streams = defineTool({
      name: 'streams',
      description: 'Streams and reports an exit code.',
      input: z.object({}),
      permission: 'write',
      maxOutputChars: 5,
      execute: async (_input, context) => {
        context.output('hello ');
        context.output('world');
        return { exitCode: 2, isError: true };
      },
    });
    expect((await runWith(streams, {}, options())).content).toEqual([
      { type: 'text', text: 'hello' },
      { type: 'text', text: '\n[output truncated: 6 more characters were cut; the first 5 are shown]\n[exit code: 2]' },
    ]);
    // an empty report after context.output: the streamed text is the output
    const quiet = defineTool({
      name: 'quiet',
      description: 'Streams, reports nothing else.',
      input: z.object({}),
      permission: 'read',
      execute: async (_input, context) => {
        context.output('streamed only');
        return {};
      },
    });
    expect((await runWith(quiet, {}, options())).content).toEqual([{ type: 'text', text: 'streamed only' }]);
  });

  it('an onOutput observer that throws does not fail the tool', async () => {
    const outcome = await runTool(
      harness.ctx.tools.require('exec_command'),
      { command: 'echo fine' },
      {
        callId: 'c',
        sessionId: 's',
        cwd: ws.dir,
        onOutput: () => {
          throw new Error('observer broke');
        },
      },
    );
    expect([outcome.isError, text(outcome)]).toEqual([false, 'fine\n\n[exit code: 0]']);
  });
});

describe('throws', () => {
  it('a thrown HarnessError keeps its code; any other throw is TOOL_FAILED; streamed output is kept', async () => {
    const coded = defineTool({
      name: 'coded',
      description: 'Throws a coded error.',
      input: z.object({}),
      permission: 'read',
      execute: () => {
        throw new HarnessError('CUSTOM_FAILURE', 'it broke');
      },
    });
    const plain = defineTool({
      name: 'plain',
      description: 'Streams, then throws.',
      input: z.object({}),
      permission: 'read',
      async *execute() {
        yield 'so far';
        throw new TypeError('bad thing');
      },
    });
    const first = await runWith(coded, {}, options());
    expect([first.isError, first.code, text(first)]).toEqual([true, 'CUSTOM_FAILURE', 'The tool failed: it broke']);
    const second = await runWith(plain, {}, options());
    expect([second.isError, second.code, text(second)]).toEqual([true, 'TOOL_FAILED', 'so far\n[The tool failed: bad thing]']);
  });

  it('a workspace tool’s HarnessError code comes through (edit_file NO_MATCH)', async () => {
    ws.write('e.txt', 'abc\n');
    const outcome = await call(harness, 'edit_file', { path: 'e.txt', old_string: 'xyz', new_string: 'q' }, options());
    expect([outcome.isError, outcome.code]).toEqual([true, 'NO_MATCH']);
  });
});

describe('abort', () => {
  it('an abort while two calls run in parallel answers both ABORTED promptly and kills the command', async () => {
    const controller = new AbortController();
    const outputs: string[] = [];
    let hangSignal: AbortSignal | undefined;
    const hang = defineTool({
      name: 'hang',
      description: 'Hangs, ignoring its signal.',
      input: z.object({}),
      permission: 'read',
      execute: (_input, context) => {
        hangSignal = context.signal;
        return never();
      },
    });
    const exec = call(harness, 'exec_command', { command: 'echo pid:$$; sleep 1000' }, options({ signal: controller.signal, outputs }));
    const hung = runWith(hang, {}, options({ signal: controller.signal }));
    expect(await waitFor(() => /pid:\d+/.test(outputs.join('')), 5000)).toBe(true);
    const pid = Number(/pid:(\d+)/.exec(outputs.join(''))![1]);
    const abortedAtMs = Date.now();
    controller.abort();
    const [first, second] = await Promise.all([exec, hung]);
    expect(Date.now() - abortedAtMs).toBeLessThan(500);
    expect([first.code, second.code]).toEqual(['ABORTED', 'ABORTED']);
    expect(text(first)).toBe(`pid:${pid}\n\n[The user aborted this tool call.]`);
    expect(text(second)).toBe('The user aborted this tool call.');
    expect((hangSignal!.reason as HarnessError).code).toBe('ABORTED');
    expect(await waitFor(() => !isRunning(pid), 3000)).toBe(true);
  });

  it('an abort before the call starts never runs the tool', async () => {
    let ran = false;
    const tool = defineTool({
      name: 'spy',
      description: 'Records that it ran.',
      input: z.object({}),
      permission: 'read',
      execute: () => {
        ran = true;
        return 'ran';
      },
    });
    const controller = new AbortController();
    controller.abort();
    const outcome = await runWith(tool, {}, options({ signal: controller.signal }));
    expect([outcome.code, text(outcome), ran]).toEqual(['ABORTED', 'Aborted by the user before the tool ran.', false]);
  });
});

describe('priority: user abort > timeout > throw > the tool’s own report', () => {
  it('a user abort during the timeout race wins', async () => {
    const user = new AbortController();
    const racer = defineTool({
      name: 'racer',
      description: 'The user aborts the moment the timeout fires.',
      input: z.object({}),
      permission: 'read',
      timeoutMs: 50,
      execute: (_input, context) => {
        context.signal.addEventListener('abort', () => user.abort());
        return never();
      },
    });
    const outcome = await runWith(racer, {}, options({ signal: user.signal }));
    expect(outcome.code).toBe('ABORTED');
  });

  it('a timeout beats the throw it provokes', async () => {
    const thrower = defineTool({
      name: 'thrower',
      description: 'Throws when stopped.',
      input: z.object({}),
      permission: 'read',
      timeoutMs: 50,
      execute: (_input, context) => new Promise<string>((_resolve, reject) => context.signal.addEventListener('abort', () => reject(new HarnessError('CLEANUP_FAILED', 'could not clean up')))),
    });
    expect((await runWith(thrower, {}, options())).code).toBe('TIMEOUT');
  });

  it('a user abort beats the error report it provokes', async () => {
    const user = new AbortController();
    const reporter = defineTool({
      name: 'reporter',
      description: 'Reports an error when stopped.',
      input: z.object({}),
      permission: 'read',
      execute: (_input, context) => new Promise((resolve) => context.signal.addEventListener('abort', () => resolve({ content: 'stopped', isError: true, exitCode: 1 }))),
    });
    const pending = runWith(reporter, {}, options({ signal: user.signal }));
    user.abort();
    expect((await pending).code).toBe('ABORTED');
  });

  it('the tool’s own report stands when nothing else happened: its output, notes, then the exit code', async () => {
    const reporter = defineTool({
      name: 'own',
      description: 'Reports its own failure.',
      input: z.object({}),
      permission: 'read',
      execute: () => ({ content: 'lint found 2 problems', isError: true, exitCode: 1, notes: ['[2 problems]'] }),
    });
    const outcome: ToolOutcome = await runWith(reporter, {}, options());
    expect([outcome.isError, outcome.code, text(outcome)]).toEqual([true, 'TOOL_REPORTED_ERROR', 'lint found 2 problems\n[2 problems]\n[exit code: 1]']);
  });
});

describe('invalid arguments (parseToolCall)', () => {
  it('lists the zod issues, and the tool never runs', async () => {
    let ranCount = 0;
    const counted = defineTool({
      name: 'counted',
      description: 'Counts its runs.',
      input: z.object({ path: z.string(), count: z.number().int().min(1) }),
      permission: 'read',
      execute: () => {
        ranCount += 1;
        return 'ran';
      },
    });
    const parsed = parseToolCall(counted, 'counted', '{"path": 5, "count": 0}', ['counted']);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.outcome.code).toBe('INVALID_ARGUMENTS');
    expect(text(parsed.outcome)).toBe(
      'The arguments for counted do not match its schema; the tool did not run:\npath: Invalid input: expected string, received number\ncount: Too small: expected number to be >=1',
    );
    expect(ranCount).toBe(0);
    const ok = parseToolCall(counted, 'counted', '{"path": "a", "count": 2}', ['counted']);
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(text(await runWith(ok.tool, ok.input, options()))).toBe('ran');
    expect(ranCount).toBe(1);
  });

  it('for the workspace tools: wrong types, unknown keys, bad JSON, an unknown tool', () => {
    const tools = harness.ctx.tools;
    const read = tools.require('read_file');
    const wrong = parseToolCall(read, 'read_file', '{"path": 5, "offset": 0}', tools.ids());
    expect(wrong.ok ? '' : text(wrong.outcome)).toBe(
      'The arguments for read_file do not match its schema; the tool did not run:\npath: Invalid input: expected string, received number\noffset: Too small: expected number to be >=1',
    );
    const extra = parseToolCall(tools.require('write_file'), 'write_file', '{"file_path": "a", "content": "x"}', tools.ids());
    expect(extra.ok ? '' : text(extra.outcome)).toBe(
      'The arguments for write_file do not match its schema; the tool did not run:\npath: Invalid input: expected string, received undefined\n(input): Unrecognized key: "file_path"',
    );
    const json = parseToolCall(read, 'read_file', '{"path": ', tools.ids());
    expect(json.ok ? '' : json.outcome.code).toBe('INVALID_ARGUMENTS');
    const unknown = parseToolCall(undefined, 'rm_rf', '{}', tools.ids());
    expect(unknown.ok ? '' : text(unknown.outcome)).toBe('There is no tool named "rm_rf". Available tools: read_file, write_file, edit_file, list_dir, grep, exec_command.');
  });
});
