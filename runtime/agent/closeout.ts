/**
 * Central tool close-out (seed 000 "内层工具契约"): the runtime, not the tool author, guarantees the
 * protocol. Arguments are parsed before the body runs; the body gets a signal that fires on user
 * abort or timeout; its output is capped (head kept, with a marker saying how much was cut, and
 * notes — exit code, truncation — outside the cap); a throw becomes an `isError` result. When several
 * things happen, the priority is: user abort > timeout > throw > the tool's own report.
 * Every call gets exactly one outcome, always.
 */
import { secrets } from '../kernel/secrets.ts';
import { HarnessError, getErrorInfo } from '../kernel/errors.ts';
import { formatIssues } from '../kernel/schema.ts';
import type { ImageBlock, TextBlock } from '../llm/types.ts';
import { DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TOOL_TIMEOUT_MS, type StreamedToolOutput, type ToolContext, type ToolDefinition, type ToolOutput } from './tools.ts';

/** The one outcome of one tool call. `code` names why it failed, when it did. */
export interface ToolOutcome {
  readonly content: readonly (TextBlock | ImageBlock)[];
  readonly isError: boolean;
  /** `INVALID_ARGUMENTS`, `UNKNOWN_TOOL`, `DENIED`, `ABORTED`, `TIMEOUT`, `TOOL_FAILED`, … */
  readonly code?: string;
  readonly durationMs: number;
}

export interface ParsedCall {
  readonly ok: true;
  readonly tool: ToolDefinition;
  readonly input: unknown;
}

/** Parses a call's raw JSON arguments with the tool's schema; a failure is an outcome for the model. */
export function parseToolCall(tool: ToolDefinition | undefined, name: string, rawArguments: string, knownTools: readonly string[]): ParsedCall | { ok: false; outcome: ToolOutcome } {
  if (tool === undefined) {
    return { ok: false, outcome: errorOutcome('UNKNOWN_TOOL', `There is no tool named "${name}". Available tools: ${knownTools.join(', ') || 'none'}.`) };
  }
  let args: unknown;
  try {
    args = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch (error) {
    return { ok: false, outcome: errorOutcome('INVALID_ARGUMENTS', `The arguments for ${name} are not valid JSON (${(error as Error).message}). Send a JSON object matching the tool's schema.`) };
  }
  try {
    return { ok: true, tool, input: tool.input.parse(args) };
  } catch (error) {
    const info = getErrorInfo(error);
    const detail = info.issues.length ? formatIssues(info.issues) : error instanceof Error ? error.message : String(error);
    return { ok: false, outcome: errorOutcome('INVALID_ARGUMENTS', `The arguments for ${name} do not match its schema; the tool did not run:\n${detail}`) };
  }
}

export function errorOutcome(code: string, text: string, durationMs = 0): ToolOutcome {
  return { content: [{ type: 'text', text }], isError: true, code, durationMs };
}

export interface RunToolOptions {
  readonly callId: string;
  readonly sessionId: string;
  readonly cwd: string;
  /** The user's abort. */
  readonly signal?: AbortSignal;
  /** Receives streamed partial output. */
  readonly onOutput?: (text: string) => void;
  readonly turn?: number;
  readonly step?: number;
  readonly session?: ToolContext['session'];
  readonly config?: ToolContext['config'];
  readonly approve?: ToolContext['approve'];
  /** Receives the child-session events a tool forwards (see `ToolContext.forward`). */
  readonly onForward?: NonNullable<ToolContext['forward']>;
}

const USER_ABORT = 'user-abort';
const TIMEOUT = 'timeout';

/** Longest delay `setTimeout` honours; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

type BodyResult = { readonly kind: 'done'; readonly output: ToolOutput; readonly fromStream: boolean } | { readonly kind: 'threw'; readonly error: unknown };

/** Runs a parsed call under the close-out rules. Never throws. */
export async function runTool(tool: ToolDefinition, input: unknown, options: RunToolOptions): Promise<ToolOutcome> {
  const startedAtMs = performance.now();
  const elapsed = () => Math.round(performance.now() - startedAtMs);
  if (options.signal?.aborted) return errorOutcome('ABORTED', 'Aborted by the user before the tool ran.', 0);
  // The call's own signal is made when the body first reads `context.signal`: most bodies never
  // do, and an AbortController plus its abort at the end was ~6% of the loop's CPU on a stream of
  // many small calls. `stopReason` is why the call was stopped, whether or not a signal exists yet;
  // a signal made later is born aborted with it.
  let controller: AbortController | undefined;
  let stopReason: HarnessError | undefined;
  const stop = (reason: HarnessError): void => {
    stopReason = reason;
    controller?.abort(reason);
  };
  const signalOfCall = (): AbortSignal => {
    if (controller === undefined) {
      controller = new AbortController();
      if (stopReason !== undefined) controller.abort(stopReason);
    }
    return controller.signal;
  };
  const timeoutMs = tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  let settle!: (cause: typeof USER_ABORT | typeof TIMEOUT) => void;
  const interrupted = new Promise<typeof USER_ABORT | typeof TIMEOUT>((resolve) => (settle = resolve));
  const onUserAbort = () => {
    stop(new HarnessError('ABORTED', 'The user aborted the tool call.'));
    settle(USER_ABORT);
  };
  const stopWatching = options.signal === undefined ? undefined : watchAbort(options.signal, onUserAbort);
  // NaN, Infinity or 0 and less: no timeout. Beyond setTimeout's range: the longest it can wait.
  const timer =
    timeoutMs > 0 && Number.isFinite(timeoutMs)
      ? setTimeout(
          () => {
            stop(new HarnessError('TIMEOUT', `The tool call timed out after ${timeoutMs} ms.`));
            settle(TIMEOUT);
          },
          Math.min(timeoutMs, MAX_TIMER_MS),
        )
      : undefined;
  const cap = tool.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  // The streamed output, kept up to the cap; what goes beyond is only counted (a tool may stream 10 MB).
  let streamed = '';
  let streamedOverflow = 0;
  const context: ToolContext = {
    get signal() {
      return signalOfCall();
    },
    callId: options.callId,
    sessionId: options.sessionId,
    cwd: options.cwd,
    ...(options.turn !== undefined ? { turn: options.turn } : {}),
    ...(options.step !== undefined ? { step: options.step } : {}),
    ...(options.session ? { session: options.session } : {}),
    ...(options.config ? { config: options.config } : {}),
    ...(options.approve ? { approve: options.approve } : {}),
    forward: (event, hop) => options.onForward?.(event, hop),
    output(text: string) {
      if (stopReason !== undefined || typeof text !== 'string' || text === '') return;
      if (cap <= 0) streamed += text;
      else {
        const room = cap - streamed.length;
        if (room >= text.length) streamed += text;
        else {
          if (room > 0) streamed += text.slice(0, room);
          streamedOverflow += text.length - Math.max(0, room);
        }
      }
      try {
        options.onOutput?.(text);
      } catch {
        // A failing observer of partial output must not fail the tool.
      }
    },
  };
  const fromReport = (value: ToolOutput | StreamedToolOutput | string | void): { output: ToolOutput; fromStream: boolean } => {
    const report = normalizeOutput(value);
    return report.content === undefined ? { output: { ...report, content: streamed }, fromStream: true } : { output: report as ToolOutput, fromStream: false };
  };
  const body = (async (): Promise<BodyResult> => {
    try {
      const result = tool.execute(input, context);
      if (isAsyncGenerator(result)) {
        let step = await result.next();
        while (!step.done) {
          context.output(String(step.value));
          if (stopReason !== undefined) {
            await result.return?.(undefined).catch(() => undefined);
            return { kind: 'done', output: { content: streamed }, fromStream: true };
          }
          step = await result.next();
        }
        return { kind: 'done', ...fromReport(step.value) };
      }
      return { kind: 'done', ...fromReport(await result) };
    } catch (error) {
      return { kind: 'threw', error };
    }
  })();
  try {
    const first = await Promise.race([body, interrupted]);
    // Priority: user abort > timeout > throw > the tool's own report.
    const cause = stopReason !== undefined ? (options.signal?.aborted ? USER_ABORT : TIMEOUT) : first;
    if (cause === USER_ABORT) return withPartial('ABORTED', 'The user aborted this tool call.', streamed, cap, elapsed(), streamedOverflow);
    if (cause === TIMEOUT) return withPartial('TIMEOUT', `The tool call timed out after ${timeoutMs} ms and was stopped.`, streamed, cap, elapsed(), streamedOverflow);
    const settled = first as BodyResult;
    if (settled.kind === 'threw') {
      const message = settled.error instanceof Error ? settled.error.message : String(settled.error);
      const code = HarnessError.is(settled.error) ? settled.error.code : 'TOOL_FAILED';
      return withPartial(code, `The tool failed: ${message}`, streamed, cap, elapsed(), streamedOverflow);
    }
    return finalize(settled.output, cap, elapsed(), settled.fromStream ? streamedOverflow : 0);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    stopWatching?.();
    // The body's signal (now or when it is first read) says the call is over.
    if (stopReason === undefined) stop(toolFinished());
  }
}

/**
 * The calls running under each caller signal, behind one `abort` listener per signal: Node's
 * EventTarget walks its whole listener list on every add and remove, so a listener per call made
 * each call O(calls running) — quadratic in a message's calls, which start together after their
 * shared checkpoint (2,000 calls: ~10% of the loop's CPU in add/remove).
 */
const abortWatchers = new WeakMap<AbortSignal, AbortFanout>();

/** One `abort` listener on a signal, calling each watcher once. */
class AbortFanout {
  readonly watchers = new Set<() => void>();
  constructor(readonly signal: AbortSignal) {
    signal.addEventListener('abort', this.fire, { once: true });
  }
  readonly fire = (): void => {
    abortWatchers.delete(this.signal);
    for (const watcher of this.watchers) watcher();
  };
}

/** Calls `callback` once when `signal` aborts; returns the function that stops watching. */
function watchAbort(signal: AbortSignal, callback: () => void): () => void {
  let fanout = abortWatchers.get(signal);
  if (fanout === undefined) {
    fanout = new AbortFanout(signal);
    abortWatchers.set(signal, fanout);
  }
  const watching = fanout;
  watching.watchers.add(callback);
  return () => {
    if (!watching.watchers.delete(callback) || watching.watchers.size > 0) return;
    // The listener goes with the last call under it: a long-lived signal keeps none.
    if (abortWatchers.get(signal) === watching) abortWatchers.delete(signal);
    signal.removeEventListener('abort', watching.fire);
  };
}

let finished: HarnessError | undefined;
/** The reason a finished call's signal is aborted with: one error for all calls (an error per call was ~1 µs and ~300 B of stack and failure). */
function toolFinished(): HarnessError {
  finished ??= new HarnessError('TOOL_FINISHED', 'The tool call is over.');
  return finished;
}

function normalizeOutput(value: ToolOutput | StreamedToolOutput | string | void): ToolOutput | StreamedToolOutput {
  if (typeof value === 'string') return { content: value };
  // Nothing returned: the streamed text is the output (generators and `context.output` alike).
  if (value === undefined || value === null || typeof value !== 'object') return {};
  return value;
}

function isAsyncGenerator(value: unknown): value is AsyncGenerator<string, ToolOutput | StreamedToolOutput | string | void, void> {
  return typeof value === 'object' && value !== null && typeof (value as AsyncGenerator).next === 'function' && typeof (value as AsyncGenerator)[Symbol.asyncIterator] === 'function';
}

/** Head-kept truncation: the first `cap` characters and a marker that says how much was cut. */
export function truncateHead(text: string, cap: number, extraCutCount = 0): { text: string; cutCount: number } {
  if (cap <= 0 || (text.length <= cap && extraCutCount === 0)) return { text, cutCount: 0 };
  const kept = text.slice(0, cap);
  const cutCount = Math.max(0, text.length - cap) + extraCutCount;
  return { text: kept, cutCount };
}

function finalize(output: ToolOutput, cap: number, durationMs: number, streamedOverflow: number): ToolOutcome {
  const notes = [...(output.notes ?? [])];
  const blocks: (TextBlock | ImageBlock)[] = [];
  if (typeof output.content === 'string') {
    const { text, cutCount } = truncateHead(output.content, cap, streamedOverflow);
    blocks.push({ type: 'text', text });
    if (cutCount > 0) notes.unshift(`[output truncated: ${cutCount} more characters were cut; the first ${cap} are shown]`);
  } else {
    let remaining = cap > 0 ? cap : Infinity;
    let cut = 0;
    for (const block of output.content) {
      if (block.type !== 'text') {
        blocks.push(block);
        continue;
      }
      if (block.text.length <= remaining) {
        blocks.push(block);
        remaining -= block.text.length;
      } else {
        if (remaining > 0) blocks.push({ type: 'text', text: block.text.slice(0, remaining) });
        cut += block.text.length - remaining;
        remaining = 0;
      }
    }
    if (cut > 0) notes.unshift(`[output truncated: ${cut} more characters were cut; the first ${cap} are shown]`);
  }
  if (output.exitCode !== undefined) notes.push(`[exit code: ${output.exitCode}]`);
  if (notes.length > 0) blocks.push({ type: 'text', text: `\n${notes.join('\n')}` });
  // Known secret values (a vault variable a command printed) never reach the model or the journal.
  return { content: secrets().redactValue(blocks), isError: output.isError === true, ...(output.isError ? { code: 'TOOL_REPORTED_ERROR' } : {}), durationMs };
}

function withPartial(code: string, message: string, partial: string, cap: number, durationMs: number, overflowCount = 0): ToolOutcome {
  const blocks: TextBlock[] = [];
  if (partial.length > 0) {
    const { text, cutCount } = truncateHead(partial, cap, overflowCount);
    blocks.push({ type: 'text', text });
    blocks.push({ type: 'text', text: `\n${cutCount > 0 ? `[output truncated: ${cutCount} more characters were cut]\n` : ''}[${message}]` });
  } else {
    blocks.push({ type: 'text', text: message });
  }
  return { content: secrets().redactValue(blocks), isError: true, code, durationMs };
}
