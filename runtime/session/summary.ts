/**
 * Session summaries (`harness sessions`, `JournalStore.list`), read cheaply from a session's lines:
 * only the lines that matter (turns, titles, usage) are parsed — the writer's fixed key order lets
 * every other line (chunks above all) be skipped by its prefix.
 */
import type { TokenUsage } from '../llm/types.ts';
import type { AnySessionEvent, SessionEvent, SessionHeader } from './events.ts';
import type { SessionSummary } from './types.ts';

export type { SessionSummary } from './types.ts';
import type { HarnessError } from '../kernel/errors.ts';
import { assertForkComplete, parseEventLine, parseHeaderLine } from './reader.ts';

/** The envelope of a record line as the writer makes it: seq, type, atMs. */
export const RECORD_ENVELOPE = /^\{"seq":(\d+),"type":"([^"\\]+)","atMs":(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?),/;
/** The only event types a summary parses. */
export const SUMMARY_TYPES: ReadonlySet<string> = new Set(['turn/start', 'turn/end', 'session/title', 'assistant/message', 'compaction/summary']);

/** Folds a session's lines (header first) into a summary. */
export class Summarizer {
  header: SessionHeader | undefined;
  private title: string | undefined;
  private turnCount = 0;
  private openTurn: { turn: number; startSeq: number } | undefined;
  private eventCount = 0;
  /** `atMs` of the last event seen. */
  lastAtMs: number | undefined;
  private readonly usage: Record<string, number> = {};
  /** Per `provider \u0000 model`: the calls' usage totals (`SessionSummary.usageByModel`). */
  private readonly byModel = new Map<string, { provider: string; model: string; usage: Record<string, number>; callCount: number }>();

  constructor(private readonly where: string) {}

  /** One line (`terminated` false: a torn tail, left out). @throws the header's errors. */
  line(text: string, terminated = true): void {
    if (this.header === undefined) {
      this.header = parseHeaderLine(text, this.where, terminated);
      return;
    }
    if (!terminated) return;
    const match = RECORD_ENVELOPE.exec(text);
    if (match !== null) {
      this.lastAtMs = Number(match[3]);
      if (!SUMMARY_TYPES.has(match[2]!)) {
        this.eventCount++;
        return;
      }
    }
    const parsed = parseEventLine(text);
    if (typeof parsed === 'string') return;
    this.event(parsed);
  }

  /** Counts an event of a line without its text (a store that knows the type: only summary types need `event`). */
  skipped(atMs: number | undefined, count = 1): void {
    this.eventCount += count;
    if (atMs !== undefined) this.lastAtMs = atMs;
  }

  event(event: AnySessionEvent): void {
    const type = event.type;
    this.lastAtMs = event.atMs;
    this.eventCount++;
    if (type === 'turn/start') {
      this.turnCount++;
      this.openTurn = { turn: (event as SessionEvent<'turn/start'>).data.turn, startSeq: event.seq };
    } else if (type === 'turn/end') {
      if (this.openTurn?.turn === (event as SessionEvent<'turn/end'>).data.turn) this.openTurn = undefined;
    } else if (type === 'session/title') this.title = (event as SessionEvent<'session/title'>).data.title;
    else if (type === 'assistant/message') {
      const data = (event as SessionEvent<'assistant/message'>).data;
      this.add(data.usage, data.message?.source?.provider, data.message?.source?.model);
    } else if (type === 'compaction/summary') {
      const data = (event as SessionEvent<'compaction/summary'>).data;
      this.add(data.usage, data.provider, data.model);
    }
  }

  private add(value: TokenUsage | undefined, provider: unknown, model: unknown): void {
    if (value === undefined || value === null) return;
    for (const [key, count] of Object.entries(value)) if (typeof count === 'number') this.usage[key] = (this.usage[key] ?? 0) + count;
    if (typeof provider !== 'string' || typeof model !== 'string') return;
    const key = `${provider}\u0000${model}`;
    let entry = this.byModel.get(key);
    if (entry === undefined) {
      entry = { provider, model, usage: {}, callCount: 0 };
      this.byModel.set(key, entry);
    }
    entry.callCount++;
    for (const [name, count] of Object.entries(value)) if (typeof count === 'number') entry.usage[name] = (entry.usage[name] ?? 0) + count;
  }

  /** The summary (`fallbackUpdateAtMs` when no event carried a time). Needs the header. */
  finish(path: string, fallbackUpdateAtMs: number): SessionSummary {
    const h = this.header!;
    if (h.parent !== undefined && this.eventCount < h.parent.seq) {
      try {
        assertForkComplete(path, h, this.eventCount);
      } catch (error) {
        const info = { code: (error as HarnessError).code, message: (error as Error).message };
        return { id: h.id, path, turnCount: 0, usage: {}, eventCount: this.eventCount, lastUpdateAtMs: fallbackUpdateAtMs, parent: h.parent, error: info };
      }
    }
    return {
      id: h.id,
      path,
      createdAtMs: h.createdAtMs,
      ...(this.title !== undefined ? { title: this.title } : {}),
      ...(h.cwd !== undefined ? { cwd: h.cwd } : {}),
      turnCount: this.turnCount,
      ...(this.openTurn !== undefined ? { openTurn: this.openTurn } : {}),
      usage: this.usage,
      ...(this.byModel.size > 0 ? { usageByModel: [...this.byModel.values()] } : {}),
      eventCount: this.eventCount,
      lastUpdateAtMs: this.lastAtMs ?? fallbackUpdateAtMs,
      ...(h.parent ? { parent: h.parent } : {}),
      ...(h.parentSession ? { parentSession: h.parentSession } : {}),
      ...(h.importedFrom ? { importedFrom: h.importedFrom } : {}),
    };
  }

  /** Seq-less count so far (the events seen). */
  get events(): number {
    return this.eventCount;
  }
}

/** Most recently updated first; unreadable ones last. */
export function sortSummaries(out: SessionSummary[]): SessionSummary[] {
  return out.sort((a, b) => Number(a.error !== undefined) - Number(b.error !== undefined) || b.lastUpdateAtMs - a.lastUpdateAtMs || a.id.localeCompare(b.id));
}
