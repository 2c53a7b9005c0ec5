/**
 * Rendering session events for a person: live (streamed chunks, a spinner while the model is
 * silent) for `run` and `chat`, and as a transcript (assembled messages) for `replay`.
 *
 * Everything that came from a model, a tool or a journal is printed through `printable` (format.ts):
 * its control characters are shown, never obeyed. Only the renderer's own colours reach the terminal.
 */
import ora, { type Ora } from 'ora';
import type { AnySessionEvent, ForwardedEvent, Message, SessionEvent, SessionHeader, StreamChunk } from '../runtime/index.ts';
import { type Io, terminalStream } from './env.ts';
import { diffLine, hasUnifiedDiff } from './diff-view.ts';
import { MarkdownStream, type RenderMarkdown } from './markdown.ts';
import { formatArguments, formatMs, formatUsage, headLines, oneLine, printable, PrintableStream, toolResultText } from './format.ts';

const RESULT_LINES = 4;
/** A diff in a tool result (an edit) is shown up to this many lines (`replay --full`: all of it). */
const DIFF_LINES = 80;
/**
 * Starts every line of reasoning, so it reads apart from the answer without colour too (NO_COLOR,
 * a pipe); with colour it is also dimmed.
 */
export const REASONING_MARK = '┊ ';

/** The lines of a tool result to show: the first few (a diff: coloured, many more), or all (`full`). */
function resultLines(text: string, isError: boolean, io: Io, full: boolean): { lines: string[]; more: number; diff: boolean } {
  const { c } = io;
  const diff = !isError && hasUnifiedDiff(text);
  const { lines, more } = headLines(text, full ? Number.MAX_SAFE_INTEGER : diff ? DIFF_LINES : RESULT_LINES);
  const shown = lines.map((line) => (diff ? diffLine(line, io) : full ? c.dim(printable(line)) : isError ? c.red(oneLine(line, 160)) : c.dim(oneLine(line, 160))));
  return { lines: shown, more, diff };
}

/** A tool call's key: its id after the ids of the child sessions it was made in (a subagent's call has an origin). */
function callKey(call: { readonly callId: string; readonly origin?: readonly string[] | undefined }): string {
  return JSON.stringify([...(call.origin ?? []), call.callId]);
}

/** The key of the tool call an event is about, if it is about one. */
function callKeyOf(event: ForwardedEvent): string | undefined {
  const data = event.data as { readonly callId?: unknown };
  return typeof data.callId === 'string' ? callKey({ callId: data.callId, origin: event.origin }) : undefined;
}

/** A child session's short name: `sub1` of `<parent>.sub1`, else its id. */
export function subagentLabel(sessionId: string): string {
  const match = /\.(sub\d+)$/.exec(sessionId);
  return match ? match[1]! : sessionId;
}

/** Prints a turn as it happens. */
export class LiveRenderer {
  private readonly io: Io;
  private spinner: Ora | undefined;
  /** The cursor is not at the start of a line. */
  private midLine = false;
  private current: 'reasoning' | 'text' | undefined;
  private readonly toolNames = new Map<string, string>();
  /** The calls whose `→` line is printed, a subagent's too ({@link callKey}). */
  private readonly shownCalls = new Set<string>();
  /** Calls a person is to be asked about ({@link askingAbout}), by key, each with what starts its question. */
  private readonly toAsk = new Map<string, () => void>();
  /**
   * The call whose question is on the terminal, and the events that came meanwhile: printed once the
   * call's decision has been (see {@link askingAbout}).
   */
  private asking: { readonly key: string; readonly held: ForwardedEvent[] } | undefined;
  /** The streamed text of the current block, made printable fragment by fragment. */
  private stream = new PrintableStream();
  /** The next reasoning text starts a line (and gets {@link REASONING_MARK}). */
  private reasoningLineStart = true;
  /** Renders answers' markdown (a colour terminal only; see markdown.ts). */
  private readonly markdown: RenderMarkdown | undefined;
  /** The current text block's markdown, rendered a block at a time. */
  private markdownStream: MarkdownStream | undefined;
  /** Notices waiting for the end of the streamed line ({@link notice}). */
  private readonly notices: string[] = [];
  /** Assistant messages produced in this run. */
  messageCount = 0;
  lastTurnEnd: SessionEvent<'turn/end'> | undefined;

  constructor(io: Io, options: { markdown?: RenderMarkdown } = {}) {
    // The spinner erases ⌈width ÷ columns⌉ rows: its streams get the CLI's size rule whoever made them.
    terminalStream(io.out);
    terminalStream(io.err);
    this.io = io;
    this.markdown = options.markdown;
  }

  /** Stops the spinner (before something else writes to the terminal, e.g. an approval question). */
  pause(): void {
    this.spinner?.stop();
    this.spinner = undefined;
  }

  /** Ends the current line, if one is open. */
  breakLine(): void {
    if (this.midLine) this.write('\n');
  }

  /** Prints a full line of its own (a notice between streamed output). */
  line(text: string): void {
    this.pause();
    this.breakLine();
    this.write(`${text}\n`);
  }

  /**
   * Prints a line that comes from outside the turn (a plugin reloaded) without splitting the
   * streamed output: at once when no line is open, else at the end of the line being streamed —
   * the next line end the reply writes, or when its block, the call or the turn ends. While a
   * question is asked, after the line of its decision.
   */
  notice(text: string): void {
    if (!this.midLine && this.asking === undefined) return this.line(text);
    this.notices.push(text);
  }

  event(event: ForwardedEvent): void {
    if (event.type === 'turn/end' && event.origin === undefined) this.endQuestions();
    const asking = this.asking;
    const key = callKeyOf(event);
    if (asking !== undefined && key !== asking.key) {
      asking.held.push(event);
      return;
    }
    this.render(event);
    if (event.type === 'tool/call' && key !== undefined) {
      this.shownCalls.add(key);
      this.nextQuestion();
    } else if (event.type === 'approval/decided' && asking !== undefined) {
      // The answer and its decision are printed: what came meanwhile follows (a later call's line may open its question).
      this.asking = undefined;
      this.nextQuestion();
      for (const held of asking.held) this.event(held);
    }
  }

  private render(event: ForwardedEvent): void {
    const { c } = this.io;
    if (event.origin !== undefined) return this.childEvent(event, event.origin);
    switch (event.type) {
      case 'step/start':
        this.wait('thinking…');
        break;
      case 'assistant/chunk':
        this.chunk(event.data.chunk);
        break;
      case 'assistant/message':
        this.messageCount++;
        this.current = undefined;
        if (event.data.interrupted) this.line(c.yellow('(interrupted: the rest of this reply was not received)'));
        break;
      case 'tool/call':
        this.toolNames.set(event.data.callId, event.data.name);
        this.line(`${c.cyan('→')} ${c.bold(printable(event.data.name))} ${c.dim(formatArguments(event.data.arguments))}`);
        break;
      case 'approval/decided':
        if (event.data.decision === 'deny') this.line(c.red(`  ✗ denied (${printable(event.data.decidedBy)}${event.data.reason ? `: ${oneLine(event.data.reason, 300)}` : ''})`));
        else if (event.data.decidedBy === 'user') this.line(c.dim(`  ✓ allowed by you${event.data.reason ? ` (${oneLine(event.data.reason, 300)})` : ''}`));
        break;
      case 'tool/start':
        this.wait(`running ${this.toolNames.get(event.data.callId) ?? 'tool'}…`);
        break;
      case 'tool/result':
        this.toolResult(event.data);
        break;
      case 'llm/retry': {
        const { attempt, maxRetries, delayMs, failure } = event.data;
        this.line(c.yellow(`↻ retry ${attempt}/${maxRetries} in ${formatMs(delayMs)} — ${printable(failure.code)}: ${oneLine(failure.message, 160)}`));
        this.wait('waiting to retry…');
        break;
      }
      case 'compaction/start':
        this.line(c.dim(`… compacting ${event.data.messageCount} messages (${event.data.trigger})`));
        break;
      case 'compaction/end':
        this.line(
          c.dim(
            event.data.outcome === 'compacted' ? `… compacted (${event.data.keptMessageCount ?? '?'} messages kept)` : `… compaction failed: ${oneLine(event.data.failure?.message ?? 'unknown', 240)}`,
          ),
        );
        break;
      case 'turn/end':
        this.pause();
        this.breakLine();
        this.lastTurnEnd = event as SessionEvent<'turn/end'>;
        break;
      default:
        break;
    }
  }

  /**
   * Resolves when the question about a tool call may be asked: once the call's line has been printed
   * (and an earlier question's decision). From then until the call's decision is printed, everything
   * else is held back and printed after it: the loop journals all the calls of a step before it asks
   * about the first, and the next call's `→` line (or a spinner) must not land on the question's line
   * — the question is asked right below the line of the call it is about. A subagent's call (its
   * request has an origin) is found by its `[sub1] →` line; questions are asked one at a time, in
   * the order they were asked for (a subagent's may come while its parent's is open).
   */
  askingAbout(call: { readonly callId: string; readonly origin?: readonly string[] }): Promise<void> {
    return new Promise((done) => {
      this.toAsk.set(callKey(call), done);
      this.nextQuestion();
    });
  }

  /** Stops the spinner and closes the line (the run is over); prints what a question held back. */
  finish(): void {
    this.endQuestions();
    this.pause();
    this.breakLine();
  }

  /** Opens the question of the first call to ask about whose line is printed, unless one is open. */
  private nextQuestion(): void {
    if (this.asking !== undefined) return;
    for (const [key, start] of this.toAsk) {
      if (!this.shownCalls.has(key)) continue;
      this.toAsk.delete(key);
      this.asking = { key, held: [] };
      start();
      return;
    }
  }

  /** No decision is coming (the turn ended): what was held back is printed, nothing is held any more. */
  private endQuestions(): void {
    this.toAsk.clear();
    const held = this.asking?.held ?? [];
    this.asking = undefined;
    for (const event of held) this.render(event);
  }

  private chunk(chunk: StreamChunk): void {
    const { c } = this.io;
    switch (chunk.type) {
      case 'block-start':
        this.pause();
        if (chunk.blockType === 'reasoning' || chunk.blockType === 'text') {
          this.breakLine();
          this.current = chunk.blockType;
          this.stream = new PrintableStream();
          this.reasoningLineStart = true;
          this.markdownStream = chunk.blockType === 'text' && this.markdown ? new MarkdownStream(this.markdown) : undefined;
        }
        break;
      case 'reasoning-delta': {
        this.pause();
        const text = this.stream.push(chunk.text);
        if (text) this.write(c.dim(this.marked(text)));
        break;
      }
      case 'text-delta': {
        this.pause();
        const text = this.stream.push(chunk.text);
        this.write(this.markdownStream ? this.markdownStream.push(text) : text);
        break;
      }
      case 'block-end':
        if (this.current !== undefined) {
          const rest = this.stream.flush();
          if (this.current === 'reasoning') this.write(rest ? c.dim(this.marked(rest)) : rest);
          else this.write(this.markdownStream ? this.markdownStream.push(rest) + this.markdownStream.flush() : rest);
          this.breakLine();
        }
        this.current = undefined;
        this.markdownStream = undefined;
        break;
      case 'finish':
        this.pause();
        this.breakLine();
        break;
      default:
        break;
    }
  }

  /**
   * An event of a child session (a subagent): its tool calls, decisions, results and replies, one
   * line each, indented one level per hop and marked with the child's id (its stream is not shown).
   */
  private childEvent(event: AnySessionEvent, origin: readonly string[]): void {
    const { c } = this.io;
    const indent = '  '.repeat(origin.length);
    const who = c.magenta(`[${printable(subagentLabel(origin.at(-1)!))}]`);
    switch (event.type) {
      case 'tool/call':
        this.line(`${indent}${who} ${c.cyan('→')} ${c.bold(printable(event.data.name))} ${c.dim(formatArguments(event.data.arguments))}`);
        break;
      case 'approval/decided':
        if (event.data.decision === 'deny') this.line(`${indent}${who} ${c.red(`✗ denied (${printable(event.data.decidedBy)}${event.data.reason ? `: ${oneLine(event.data.reason, 200)}` : ''})`)}`);
        break;
      case 'tool/result': {
        const { text, isError } = toolResultText(event.data.message);
        const first = oneLine(text.split('\n')[0] ?? '', 120);
        this.line(`${indent}${who} ${isError ? c.red(`✗ failed${event.data.code ? ` (${printable(event.data.code)})` : ''}`) : c.green('✓')} ${c.dim(first)}`);
        break;
      }
      case 'assistant/message': {
        const text = event.data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
        if (text.trim() !== '') this.line(`${indent}${who} ${oneLine(text, 200)}`);
        break;
      }
      case 'turn/end':
        if (event.data.reason !== 'completed') this.line(`${indent}${who} ${c.yellow(`turn ended ${printable(event.data.reason)}`)}`);
        break;
      default:
        break;
    }
  }

  /** Reasoning text with {@link REASONING_MARK} at the start of each of its lines. */
  private marked(text: string): string {
    let out = '';
    for (const part of text.split(/(?<=\n)/)) {
      if (this.reasoningLineStart && part !== '') out += REASONING_MARK;
      out += part;
      this.reasoningLineStart = part.endsWith('\n');
    }
    return out;
  }

  private toolResult(data: SessionEvent<'tool/result'>['data']): void {
    const { c } = this.io;
    const { text, isError } = toolResultText(data.message);
    const name = this.toolNames.get(data.callId) ?? 'tool';
    const { lines, more, diff } = resultLines(text, isError, this.io, false);
    const status = isError ? c.red(`✗ ${printable(name)} failed${data.code ? ` (${printable(data.code)})` : ''}`) : c.green(`✓ ${printable(name)}`);
    const took = data.durationMs !== undefined ? c.dim(` ${formatMs(data.durationMs)}`) : '';
    this.line(`  ${status}${took}`);
    for (const line of lines) this.write(`${c.dim('  │ ')}${line}\n`);
    if (more > 0) this.write(c.dim(`  │ … ${more} more line${more === 1 ? '' : 's'}${diff ? ' (replay --full shows all)' : ''}\n`));
  }

  private wait(text: string): void {
    if (!this.io.interactive) return;
    this.breakLine();
    if (this.spinner) {
      this.spinner.text = text;
      return;
    }
    // ora colours its frame through chalk, which reads FORCE_COLOR but not NO_COLOR: the Io decides.
    this.spinner = ora({ text, stream: this.io.err, discardStdin: false, color: this.io.c.isColorSupported ? 'cyan' : false }).start();
  }

  private write(text: string): void {
    if (text === '') return;
    if (this.notices.length > 0) {
      const end = text.indexOf('\n');
      if (end >= 0) {
        // The line being streamed ends here: the waiting notices go after it, each on its own line.
        this.io.out.write(`${text.slice(0, end + 1)}${this.notices.splice(0).join('\n')}\n`);
        this.midLine = false;
        text = text.slice(end + 1);
        if (text === '') return;
      }
    }
    this.io.out.write(text);
    this.midLine = !text.endsWith('\n');
  }
}

/**
 * A `plugin/reload` record as one transcript line: `↻ reloaded llm-scripted (generation 2, 14 ms)`,
 * `✗ reload of notes failed — PLUGIN_IMPORT_FAILED: … (generation 2 still serving)`, `↻ loaded x`,
 * `↻ unloaded x`, `✗ the config did not load — …`; `in turn 3` when it happened inside one.
 */
export function reloadLine(data: SessionEvent<'plugin/reload'>['data'], io: Io): string {
  const { c } = io;
  const name = printable(String(data.name ?? '?'));
  const generation = typeof data.generation === 'number' ? data.generation : undefined;
  const where = typeof data.turn === 'number' ? ` · in turn ${data.turn}${typeof data.step === 'number' ? ` step ${data.step}` : ''}` : '';
  const keys = Array.isArray(data.configKeys) && data.configKeys.length > 0 ? ` · config: ${printable(data.configKeys.join(', '))}` : '';
  const failure = data.failure ? `${printable(String(data.failure.code))}: ${oneLine(String(data.failure.message ?? ''), 200)}` : 'unknown failure';
  if (data.outcome === 'failed') {
    const what =
      data.action === 'config'
        ? `the config${data.configPath ? ` ${printable(data.configPath)}` : ''} did not load — ${failure} (nothing changed)`
        : data.action === 'reload'
          ? `reload of ${name} failed — ${failure}${generation !== undefined ? ` (generation ${generation} still serving)` : ''}`
          : `${data.action} of ${name} failed — ${failure}`;
    return c.red(`✗ ${what}${keys}${where}`);
  }
  const verb = data.action === 'reload' ? 'reloaded' : data.action === 'load' ? 'loaded' : data.action === 'unload' ? 'unloaded' : printable(String(data.action));
  const details = [generation !== undefined ? `generation ${generation}` : '', typeof data.reloadMs === 'number' ? formatMs(data.reloadMs) : ''].filter(Boolean).join(', ');
  return c.green(`↻ ${verb} ${name}${details ? ` (${details})` : ''}${keys}${where}`);
}

/** Prints a journal as a readable transcript, event by event (assembled messages, not chunks). */
export class TranscriptPrinter {
  private readonly io: Io;
  private readonly toolNames = new Map<string, string>();
  /** Put before every line: a child session's (subagent's) transcript is indented under its parent's. */
  private readonly indent: string;
  /** Whole tool outputs, lines uncut (`replay --full`). */
  private readonly full: boolean;
  /** Renders answers' markdown (a colour terminal only; see markdown.ts). */
  private readonly markdown: RenderMarkdown | undefined;

  constructor(io: Io, options: { full?: boolean; indent?: string; markdown?: RenderMarkdown } = {}) {
    this.io = io;
    this.indent = options.indent ?? '';
    this.full = options.full === true;
    this.markdown = options.markdown;
  }

  header(header: SessionHeader, path: string): void {
    const { c } = this.io;
    const created = Number.isFinite(header.createdAtMs) ? new Date(header.createdAtMs).toISOString() : String(header.createdAtMs);
    const lines = [`${c.bold('session')} ${printable(header.id)}`, `${c.dim('journal')} ${printable(path)}`, `${c.dim('created')} ${created}`];
    if (header.cwd) lines.push(`${c.dim('cwd')}     ${printable(header.cwd)}`);
    if (header.parent) lines.push(`${c.dim('fork of')} ${printable(header.parent.sessionId)} at seq ${header.parent.seq}`);
    if (header.parentSession)
      lines.push(
        `${c.dim('subagent of')} ${printable(header.parentSession.sessionId)}${header.parentSession.callId ? ` (call ${printable(header.parentSession.callId)})` : ''}, depth ${header.parentSession.depth}`,
      );
    if (header.importedFrom) lines.push(`${c.dim('imported')} from ${printable(header.importedFrom.format)} ${printable(header.importedFrom.path)}`);
    this.print(lines.join('\n'));
  }

  event(event: AnySessionEvent): void {
    const { c } = this.io;
    const seq = c.dim(String(event.seq).padStart(5));
    switch (event.type) {
      case 'turn/start':
        this.print(`\n${seq} ${c.bold(`── turn ${event.data.turn} ──`)}`);
        break;
      case 'turn/end': {
        const reason = event.data.reason;
        const colour = reason === 'completed' ? c.green : reason === 'aborted' || reason === 'max-tokens' ? c.yellow : c.red;
        this.print(
          `${seq} ${colour(`turn ${event.data.turn} ${printable(reason)}`)}${event.data.failure ? c.red(` — ${printable(event.data.failure.code)}: ${oneLine(event.data.failure.message, 200)}`) : ''}`,
        );
        break;
      }
      case 'request/header': {
        const { header, reason } = event.data;
        const tools = Array.isArray(header.tools) ? header.tools.map((t) => t.name).join(', ') : String(header.tools);
        this.print(
          `${seq} ${c.dim(printable(`model ${header.config.provider}/${header.config.model}${header.config.reasoningEffort ? ` (effort ${header.config.reasoningEffort})` : ''} · ${reason} · tools: ${tools || 'none'}`))}`,
        );
        break;
      }
      case 'user/message':
        this.message(seq, event.data.message);
        break;
      case 'assistant/message': {
        this.message(seq, event.data.message);
        const notes: string[] = [];
        if (event.data.interrupted) notes.push('interrupted');
        if (event.data.finish.kind !== 'stop' && event.data.finish.kind !== 'tool-calls') notes.push(`finish ${event.data.finish.kind}`);
        if (event.data.usage) notes.push(formatUsage(event.data.usage));
        if (notes.length) this.print(`      ${c.dim(notes.join(' · '))}`);
        break;
      }
      case 'tool/call':
        this.toolNames.set(event.data.callId, event.data.name);
        break;
      case 'approval/decided':
        if (event.data.decision === 'deny')
          this.print(
            `${seq} ${c.red(printable(`denied ${this.toolNames.get(event.data.callId) ?? event.data.callId} (${event.data.decidedBy}${event.data.reason ? `: ${event.data.reason}` : ''})`))}`,
          );
        else if (event.data.reason) this.print(`${seq} ${c.dim(printable(`allowed ${this.toolNames.get(event.data.callId) ?? event.data.callId} (${event.data.decidedBy}: ${event.data.reason})`))}`);
        break;
      case 'tool/result': {
        const { text, isError } = toolResultText(event.data.message);
        const name = this.toolNames.get(event.data.callId) ?? 'tool';
        const { lines, more } = resultLines(text, isError, this.io, this.full);
        this.print(`${seq} ${isError ? c.red(printable(`✗ ${name}${event.data.code ? ` (${event.data.code})` : ''}`)) : c.green(`✓ ${printable(name)}`)}`);
        for (const line of lines) this.print(`      ${c.dim('│ ')}${line}`);
        if (more > 0) this.print(`      ${c.dim(`│ … ${more} more line${more === 1 ? '' : 's'} (--full shows all)`)}`);
        break;
      }
      case 'llm/retry':
        this.print(`${seq} ${c.yellow(`retry ${event.data.attempt}/${event.data.maxRetries} after ${formatMs(event.data.delayMs)} — ${printable(event.data.failure.code)}`)}`);
        break;
      case 'compaction/summary':
        this.print(`${seq} ${c.dim(`compaction summary: ${oneLine(event.data.summary, 160)}`)}`);
        break;
      case 'surface/replace':
        this.print(`${seq} ${c.dim(`surface messages ${event.data.start}–${event.data.end} replaced by ${event.data.messages.length}`)}`);
        break;
      case 'session/title':
        this.print(`${seq} ${c.dim(`title: ${oneLine(event.data.title, 200)}`)}`);
        break;
      case 'plugin/reload':
        this.print(`${seq} ${reloadLine(event.data, this.io)}`);
        break;
      default:
        break;
    }
  }

  /** One message, role-labelled: reasoning dimmed, text as is, tool calls as `→ name args`. */
  message(prefix: string, message: Message): void {
    const { c } = this.io;
    const role =
      message.role === 'assistant'
        ? c.magenta('assistant')
        : message.source.kind === 'tool'
          ? c.cyan('tool')
          : message.source.kind === 'plugin'
            ? c.dim(`plugin ${printable(message.source.plugin)}`)
            : c.blue('user');
    const lines: string[] = [];
    for (const block of message.content) {
      if (block.type === 'text') lines.push(this.markdown ? this.markdown(printable(block.text)).replace(/\n$/, '') : printable(block.text));
      else if (block.type === 'reasoning') lines.push(...(block.redacted ? '[redacted reasoning]' : printable(block.text)).split('\n').map((line) => c.dim(`${REASONING_MARK}${line}`)));
      else if (block.type === 'tool-call') {
        this.toolNames.set(block.id, block.name);
        lines.push(`${c.cyan('→')} ${c.bold(printable(block.name))} ${c.dim(formatArguments(block.arguments))}`);
      } else if (block.type === 'tool-result') {
        const { lines: head, more } = resultLines(block.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join(''), block.isError, this.io, this.full);
        lines.push(...head.map((line) => `${c.dim('│ ')}${line}`), ...(more ? [c.dim(`│ … ${more} more`)] : []));
      } else lines.push(c.dim(`[${printable(String(block.type))}]`));
    }
    const body = lines.join('\n').split('\n');
    this.print(`${prefix} ${role}: ${body[0] ?? ''}`);
    for (const line of body.slice(1)) this.print(`      ${line}`);
  }

  print(text: string): void {
    this.io.out.write(this.indent === '' ? `${text}\n` : `${text.replace(/^/gm, this.indent)}\n`);
  }
}
