/**
 * Text formatting shared by the commands: numbers, token usage, cost, times, tool calls and results,
 * and {@link printable}, which every text that came from a model, a tool or a journal goes through
 * before it reaches the terminal.
 */
import stringWidth from 'string-width';
import type { Message, TokenUsage, ToolResultBlock } from '../runtime/index.ts';

/**
 * C0 controls but \t and \n, DEL, the C1 controls (0x80–0x9f: 0x9b is a one-byte CSI), and the
 * bidirectional embeddings, overrides and isolates (U+202A–202E, U+2066–2069), which could make
 * shown text read differently from what it is (a command up for approval, say).
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function visible(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code); // ␀ … ␛ … ␟ (Unicode control pictures)
  if (code === 0x7f) return '␡';
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Text that is safe to print: every control character but tab and newline is replaced by a visible
 * stand-in (ESC → ␛, BEL → ␇, a C1 control → `\u009b`, a bidi override → `\u202e`), so nothing a model, a tool or a journal says
 * can move the cursor, clear the screen or set the window title. CRLF line ends stay line ends.
 */
export function printable(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(CONTROL, visible);
}

/**
 * {@link printable} for a stream of fragments: a CR at the end of a fragment waits for the next one
 * (a CRLF split across two fragments is still a line end), and so does a high surrogate (an adapter
 * that cut its text by UTF-16 unit splits an emoji in two; each half alone prints as U+FFFD).
 */
export class PrintableStream {
  private held = '';

  push(text: string): string {
    let input = this.held + text;
    this.held = '';
    const last = input.charCodeAt(input.length - 1);
    if (last === 0x0d || (last >= 0xd800 && last <= 0xdbff)) {
      // A CR before a held high surrogate cannot become a CRLF any more: hold only the last unit.
      this.held = input.slice(-1);
      input = input.slice(0, -1);
    }
    return printable(input);
  }

  /** What is held back (a lone CR or high surrogate), made printable. */
  flush(): string {
    const held = this.held;
    this.held = '';
    return held === '' ? '' : printable(held);
  }
}

export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/**
 * `1,234 in · 56 out · 10 cache read · 12 reasoning`. A class the provider did not report is left
 * out, never shown as 0 (an unknown count is absent — DESIGN); none at all → `no usage reported`.
 */
export function formatUsage(usage: TokenUsage): string {
  const parts: string[] = [];
  if (usage.inputTokens !== undefined) parts.push(`${formatCount(usage.inputTokens)} in`);
  if (usage.outputTokens !== undefined) parts.push(`${formatCount(usage.outputTokens)} out`);
  if (usage.cacheReadTokens !== undefined) parts.push(`${formatCount(usage.cacheReadTokens)} cache read`);
  if (usage.cacheWriteTokens !== undefined) parts.push(`${formatCount(usage.cacheWriteTokens)} cache write`);
  if (usage.reasoningTokens !== undefined) parts.push(`${formatCount(usage.reasoningTokens)} reasoning`);
  return parts.length ? parts.join(' · ') : 'no usage reported';
}

/** Total tokens of a usage (input + cache + output; reasoning is part of output). */
export function totalTokens(usage: TokenUsage): number {
  return (usage.inputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.outputTokens ?? 0);
}

export function addUsage(into: Record<string, number>, usage: TokenUsage | undefined): void {
  if (!usage) return;
  for (const [key, value] of Object.entries(usage)) if (typeof value === 'number') into[key] = (into[key] ?? 0) + value;
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0.00';
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** `1.2k`, `3.4M`: compact token counts for tables. */
export function compactCount(value: number): string {
  if (value < 1000) return String(value);
  if (value < 1_000_000) return `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)}k`;
  return `${(value / 1_000_000).toFixed(1)}M`;
}

/** `12s ago`, `5 min ago`, `3 h ago`, else the date; `—` for an unknown time (0: a store that has none). */
export function formatAgo(atMs: number, now = Date.now()): string {
  if (!(atMs > 0)) return '—';
  const seconds = Math.max(0, Math.round((now - atMs) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return new Date(atMs).toISOString().slice(0, 10);
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The terminal columns `text` takes: a wide character (CJK, most emoji) counts 2, a colour escape 0. */
export function columnsOf(text: string): number {
  return stringWidth(text);
}

/** `text` and spaces to fill `columns` terminal columns (see {@link columnsOf}); a wider text as it is. */
export function padColumns(text: string, columns: number): string {
  return text + ' '.repeat(Math.max(0, columns - stringWidth(text)));
}

/** One printable line, at most `max` characters (an ellipsis marks the cut). */
export function oneLine(text: string, max = 120): string {
  const flat = printable(text.replace(/\s+/g, ' ').trim());
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The first line of a (possibly multi-line) message. */
export function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}

/** The one-line preview of a tool call (`→ name {…}`) shows this many characters of its arguments. */
export const PREVIEW_CHARS = 100;

/** Tool arguments for display: compact JSON when they parse, else the raw text; cut at `max`. */
export function formatArguments(raw: string, max = PREVIEW_CHARS): string {
  let text = raw;
  try {
    text = JSON.stringify(JSON.parse(raw));
  } catch {
    // keep the raw text
  }
  return oneLine(text, max);
}

/** The text of a tool-result message (its result blocks' text parts). */
export function toolResultText(message: Message): { text: string; isError: boolean } {
  const block = message.content.find((b): b is ToolResultBlock => b.type === 'tool-result');
  if (block === undefined) return { text: message.content.map((b) => ('text' in b ? b.text : '')).join(''), isError: false };
  return { text: block.content.map((part) => (part.type === 'text' ? part.text : `[${part.mediaType} image]`)).join(''), isError: block.isError };
}

/** The first `count` non-empty lines of a text, and how many lines were left out. */
export function headLines(text: string, count: number): { lines: string[]; more: number } {
  const lines = text.replace(/\s+$/, '').split('\n');
  return { lines: lines.slice(0, count), more: Math.max(0, lines.length - count) };
}
