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

/**
 * One running call: the body's `ToolContext` and the call's state in one object (methods on the
 * prototype; a closure per callback per call was ~3 KB of allocation on a stream of small calls).
 *
 * Its own signal is made when the body first reads `context.signal`: most bodies never do, and an
 * AbortController plus its abort at the end was ~6% of the loop's CPU there. `stopReason` is why
 * the call was stopped, whether or not a signal exists yet; a signal made later is born aborted
 * with it. `output` and `forward` are bound on first read, so a body may destructure them.
 */
class RunningCall implements ToolContext {
  readonly callId: string;
  readonly sessionId: string;
  readonly cwd: string;
  declare readonly turn?: number;
  declare readonly step?: number;
  declare readonly session?: ToolContext['session'];
  declare readonly config?: ToolContext['config'];
  declare readonly approve?: ToolContext['approve'];
  /** The streamed output, kept up to the cap; what goes beyond is only counted (a tool may stream 10 MB). */
  streamed = '';
  streamedOverflow = 0;
  stopReason: HarnessError | undefined = undefined;
  /** Resolves the race with the body: a user abort or the timeout. */
  interrupt: ((cause: typeof USER_ABORT | typeof TIMEOUT) => void) | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private boundOutput: ((text: string) => void) | undefined = undefined;
  private boundForward: NonNullable<ToolContext['forward']> | undefined = undefined;

  constructor(
    private readonly options: RunToolOptions,
    private readonly cap: number,
  ) {
    this.callId = options.callId;
    this.sessionId = options.sessionId;
    this.cwd = options.cwd;
    const self = this as { -readonly [K in keyof ToolContext]: ToolContext[K] };
    if (options.turn !== undefined) self.turn = options.turn;
    if (options.step !== undefined) self.step = options.step;
    if (options.session) self.session = options.session;
    if (options.config) self.config = options.config;
    if (options.approve) self.approve = options.approve;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.stopReason !== undefined) this.controller.abort(this.stopReason);
    }
    return this.controller.signal;
  }

  get output(): (text: string) => void {
    this.boundOutput ??= (text: string) => this.push(text);
    return this.boundOutput;
  }

  get forward(): NonNullable<ToolContext['forward']> {
    this.boundForward ??= (event, hop) => this.options.onForward?.(event, hop);
    return this.boundForward;
  }

  stop(reason: HarnessError): void {
    this.stopReason = reason;
    this.controller?.abort(reason);
  }

  /** The caller's abort (see {@link watchAbort}). */
  onAbort(): void {
    this.stop(new HarnessError('ABORTED', 'The user aborted the tool call.'));
    this.interrupt?.(USER_ABORT);
  }

  push(text: string): void {
    if (this.stopReason !== undefined || typeof text !== 'string' || text === '') return;
    const cap = this.cap;
    if (cap <= 0) this.streamed += text;
    else {
      const room = cap - this.streamed.length;
      if (room >= text.length) this.streamed += text;
      else {
        if (room > 0) this.streamed += text.slice(0, room);
        this.streamedOverflow += text.length - Math.max(0, room);
      }
    }
    try {
      this.options.onOutput?.(text);
    } catch {
      // A failing observer of partial output must not fail the tool.
    }
  }

  report(value: ToolOutput | StreamedToolOutput | string | void): BodyResult {
    const report = normalizeOutput(value);
    return report.content === undefined ? { kind: 'done', output: { ...report, content: this.streamed }, fromStream: true } : { kind: 'done', output: report as ToolOutput, fromStream: false };
  }
}

function onTimeout(call: RunningCall, timeoutMs: number): void {
  call.stop(new HarnessError('TIMEOUT', `The tool call timed out after ${timeoutMs} ms.`));
  call.interrupt?.(TIMEOUT);
}

async function runBody(tool: ToolDefinition, input: unknown, call: RunningCall): Promise<BodyResult> {
  try {
    const result = tool.execute(input, call);
    if (isAsyncGenerator(result)) {
      let step = await result.next();
      while (!step.done) {
        call.push(String(step.value));
        if (call.stopReason !== undefined) {
          await result.return?.(undefined).catch(() => undefined);
          return { kind: 'done', output: { content: call.streamed }, fromStream: true };
        }
        step = await result.next();
      }
      return call.report(step.value);
    }
    return call.report(await result);
  } catch (error) {
    return { kind: 'threw', error };
  }
}

/** Runs a parsed call under the close-out rules. Never throws. */
export async function runTool(tool: ToolDefinition, input: unknown, options: RunToolOptions): Promise<ToolOutcome> {
  const startedAtMs = performance.now();
  if (options.signal?.aborted) return errorOutcome('ABORTED', 'Aborted by the user before the tool ran.', 0);
  const timeoutMs = tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const cap = tool.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const call = new RunningCall(options, cap);
  const stopWatching = options.signal === undefined ? undefined : watchAbort(options.signal, call);
  // NaN, Infinity or 0 and less: no timeout. Beyond setTimeout's range: the longest it can wait.
  const timer = timeoutMs > 0 && Number.isFinite(timeoutMs) ? setTimeout(onTimeout, Math.min(timeoutMs, MAX_TIMER_MS), call, timeoutMs) : undefined;
  try {
    const body = runBody(tool, input, call);
    // The body's result, or the interruption that came first (one promise, not a race of two).
    const first = await new Promise<BodyResult | typeof USER_ABORT | typeof TIMEOUT>((resolve) => {
      call.interrupt = resolve;
      if (call.stopReason !== undefined) resolve(options.signal?.aborted ? USER_ABORT : TIMEOUT);
      body.then(resolve);
    });
    const elapsedMs = Math.round(performance.now() - startedAtMs);
    const { streamed, streamedOverflow } = call;
    // Priority: user abort > timeout > throw > the tool's own report.
    const cause = call.stopReason !== undefined ? (options.signal?.aborted ? USER_ABORT : TIMEOUT) : first;
    if (cause === USER_ABORT) return withPartial('ABORTED', 'The user aborted this tool call.', streamed, cap, elapsedMs, streamedOverflow);
    if (cause === TIMEOUT) return withPartial('TIMEOUT', `The tool call timed out after ${timeoutMs} ms and was stopped.`, streamed, cap, elapsedMs, streamedOverflow);
    const settled = first as BodyResult;
    if (settled.kind === 'threw') {
      const message = settled.error instanceof Error ? settled.error.message : String(settled.error);
      const code = HarnessError.is(settled.error) ? settled.error.code : 'TOOL_FAILED';
      return withPartial(code, `The tool failed: ${message}`, streamed, cap, elapsedMs, streamedOverflow);
    }
    return finalize(settled.output, cap, elapsedMs, settled.fromStream ? streamedOverflow : 0);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    stopWatching?.();
    // The body's signal (now or when it is first read) says the call is over.
    if (call.stopReason === undefined) call.stop(toolFinished());
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
  readonly watchers = new Set<AbortWatcher>();
  constructor(readonly signal: AbortSignal) {
    signal.addEventListener('abort', this.fire, { once: true });
  }
  readonly fire = (): void => {
    abortWatchers.delete(this.signal);
    for (const watcher of this.watchers) watcher.onAbort();
  };
}

interface AbortWatcher {
  onAbort(): void;
}

/** Calls `watcher.onAbort()` once when `signal` aborts; returns the function that stops watching. */
function watchAbort(signal: AbortSignal, watcher: AbortWatcher): () => void {
  let fanout = abortWatchers.get(signal);
  if (fanout === undefined) {
    fanout = new AbortFanout(signal);
    abortWatchers.set(signal, fanout);
  }
  const watching = fanout;
  watching.watchers.add(watcher);
  return () => {
    if (!watching.watchers.delete(watcher) || watching.watchers.size > 0) return;
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
