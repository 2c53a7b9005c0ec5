/**
 * The session as a timeline: journal events grouped into turns and steps, each step's items (the
 * assistant's reply as it streams, tool calls with their approval and result, marked events). Built
 * incrementally — one `add` per event, in seq order — so a live session costs O(1) per chunk.
 * Pure data: no DOM (render.ts draws it).
 */

/** A journal record as the server sends it (`{seq, type, atMs, data}`). */
export interface JournalEvent {
  readonly seq: number;
  readonly type: string;
  readonly atMs: number;
  // biome-ignore lint/suspicious/noExplicitAny: event payloads are read by type, field by field, and never trusted as HTML.
  readonly data: any;
  readonly ignorable?: boolean;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

export interface Block {
  readonly type: string;
  text: string;
  /** tool-call blocks while streaming */
  name?: string;
  redacted?: boolean;
}

interface ItemBase {
  /** Stable key: the seq of the item's first event. */
  readonly key: string;
  readonly seq: number;
  readonly events: JournalEvent[];
}

export interface MessageItem extends ItemBase {
  readonly kind: 'user' | 'assistant';
  blocks: Block[];
  /** Who: `user`, `plugin <name>`, `provider/model`. */
  from: string;
  /** Still streaming (no assistant/message yet). */
  live: boolean;
  usage?: Usage;
  finish?: string;
  interrupted?: boolean;
}

export interface ToolItem extends ItemBase {
  readonly kind: 'tool';
  readonly callId: string;
  name: string;
  arguments: string;
  requested?: { permission?: string; deadlineAtMs?: number; seq: number };
  approval?: { decision: string; decidedBy?: unknown; reason?: string };
  started: boolean;
  output: string;
  result?: { text: string; isError: boolean; code?: string; durationMs?: number };
}

export interface MarkerItem extends ItemBase {
  readonly kind: 'marker';
  readonly tone: 'retry' | 'compaction' | 'reload' | 'model' | 'info' | 'error';
  readonly label: string;
  readonly detail?: string;
}

export type Item = MessageItem | ToolItem | MarkerItem;

export interface Step {
  readonly kind: 'step';
  readonly key: string;
  readonly step: number;
  readonly items: Item[];
  readonly events: JournalEvent[];
  open: boolean;
}

export interface Turn {
  readonly turn: number;
  readonly key: string;
  readonly startSeq: number;
  /** Items outside a step (the prompt) and the steps, in order. */
  readonly entries: (Item | Step)[];
  readonly events: JournalEvent[];
  usage: Usage;
  end?: { reason: string; failure?: { code?: string; message?: string }; seq: number };
}

/** What the timeline holds after the events added so far. */
export interface TimelineState {
  readonly turns: Turn[];
  /** Items before the first turn (imported notes, titles, headers); later ones outside a turn join the turn before them. */
  readonly preamble: Item[];
  readonly usage: Usage;
  title?: string;
  lastSeq: number;
  eventCount: number;
  /** The model of the last request header. */
  model?: string;
}

const USAGE_KEYS = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;

/** Adds `usage`'s counts into `into`. */
export function addUsage(into: Usage, usage: Usage | undefined): void {
  if (!usage) return;
  for (const key of USAGE_KEYS) {
    const value = usage[key];
    if (typeof value === 'number') into[key] = (into[key] ?? 0) + value;
  }
}

/** Total tokens of a usage: the disjoint classes input, cache read, cache write and output. */
export function totalTokens(usage: Usage | undefined): number {
  if (!usage) return 0;
  return (usage.inputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.outputTokens ?? 0);
}

// biome-ignore lint/suspicious/noExplicitAny: message content from the journal, read defensively.
function blocksOf(content: any): Block[] {
  if (!Array.isArray(content)) return [];
  const out: Block[] = [];
  for (const block of content) {
    if (block === null || typeof block !== 'object') continue;
    if (block.type === 'text' || block.type === 'reasoning') out.push({ type: block.type, text: String(block.text ?? ''), ...(block.redacted ? { redacted: true } : {}) });
    else if (block.type === 'tool-result') out.push({ type: 'text', text: textOfToolResult(block) });
    else if (block.type === 'image' || block.type === 'file') out.push({ type: 'text', text: `[${block.type} ${String(block.mediaType ?? '')}]` });
  }
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: a tool-result block from the journal.
export function textOfToolResult(block: any): string {
  if (!block || !Array.isArray(block.content)) return '';
  // biome-ignore lint/suspicious/noExplicitAny: content parts.
  return block.content.map((part: any) => (part?.type === 'text' ? String(part.text ?? '') : `[${String(part?.type ?? 'part')}]`)).join('\n');
}

// biome-ignore lint/suspicious/noExplicitAny: a message source from the journal.
export function sourceLabel(source: any, role: string): string {
  if (source?.kind === 'model') return `${String(source.provider ?? '?')}/${String(source.model ?? '?')}`;
  if (source?.kind === 'plugin') return `plugin ${String(source.plugin ?? '?')}${source.form ? ` (${String(source.form)})` : ''}`;
  if (source?.kind === 'tool') return 'tool result';
  return role;
}

// biome-ignore lint/suspicious/noExplicitAny: a failure object from the journal.
function failureText(failure: any): string | undefined {
  if (!failure || typeof failure !== 'object') return undefined;
  return [failure.code, failure.message].filter((part) => typeof part === 'string' && part !== '').join(': ') || undefined;
}

/** Builds the timeline one event at a time (in seq order). */
export class Timeline {
  readonly state: TimelineState = { turns: [], preamble: [], usage: {}, lastSeq: 0, eventCount: 0 };
  private turn: Turn | undefined;
  private step: Step | undefined;
  private readonly tools = new Map<string, ToolItem>();
  /** The streaming reply of (turn, step). */
  private live: MessageItem | undefined;
  private liveBlocks = new Map<number, Block>();

  add(event: JournalEvent): void {
    this.state.lastSeq = event.seq;
    this.state.eventCount++;
    const d = event.data ?? {};
    switch (event.type) {
      case 'turn/start': {
        const turn: Turn = { turn: Number(d.turn), key: `t${event.seq}`, startSeq: event.seq, entries: [], events: [event], usage: {} };
        this.state.turns.push(turn);
        this.turn = turn;
        this.step = undefined;
        return;
      }
      case 'turn/end': {
        const turn = this.turn;
        if (turn) {
          turn.events.push(event);
          turn.end = { reason: String(d.reason ?? '?'), ...(d.failure ? { failure: d.failure } : {}), seq: event.seq };
        }
        if (this.step) this.step.open = false;
        this.turn = undefined;
        this.step = undefined;
        this.live = undefined;
        return;
      }
      case 'step/start': {
        const step: Step = { kind: 'step', key: `s${event.seq}`, step: Number(d.step), items: [], events: [event], open: true };
        this.ensureTurn(event).entries.push(step);
        this.step = step;
        this.live = undefined;
        this.liveBlocks = new Map();
        return;
      }
      case 'step/end': {
        if (this.step) {
          this.step.events.push(event);
          this.step.open = false;
        }
        this.step = undefined;
        this.live = undefined;
        return;
      }
      case 'user/message': {
        const message = d.message ?? {};
        this.push({ kind: 'user', key: `i${event.seq}`, seq: event.seq, events: [event], blocks: blocksOf(message.content), from: sourceLabel(message.source, 'user'), live: false });
        return;
      }
      case 'assistant/chunk':
        this.chunk(event);
        return;
      case 'assistant/message': {
        const message = d.message ?? {};
        let item = this.live;
        if (item === undefined) {
          item = { kind: 'assistant', key: `i${event.seq}`, seq: event.seq, events: [], blocks: [], from: '', live: true };
          this.push(item);
        }
        item.events.push(event);
        item.blocks = blocksOf(message.content);
        item.from = sourceLabel(message.source, 'assistant');
        item.live = false;
        if (d.usage) item.usage = d.usage;
        if (d.finish?.kind) item.finish = String(d.finish.kind);
        if (d.interrupted) item.interrupted = true;
        addUsage(this.state.usage, d.usage);
        if (this.turn) addUsage(this.turn.usage, d.usage);
        this.live = undefined;
        return;
      }
      case 'tool/call': {
        const item: ToolItem = {
          kind: 'tool',
          key: `i${event.seq}`,
          seq: event.seq,
          events: [event],
          callId: String(d.callId),
          name: String(d.name ?? '?'),
          arguments: String(d.arguments ?? ''),
          started: false,
          output: '',
        };
        this.tools.set(item.callId, item);
        this.push(item);
        return;
      }
      case 'approval/requested': {
        const item = this.tools.get(String(d.callId));
        if (item) {
          item.events.push(event);
          item.requested = { permission: d.permission, deadlineAtMs: d.deadlineAtMs, seq: event.seq };
        } else this.marker(event, 'info', `approval asked for ${String(d.name ?? d.callId)}`);
        return;
      }
      case 'approval/decided': {
        const item = this.tools.get(String(d.callId));
        if (item) {
          item.events.push(event);
          item.approval = { decision: String(d.decision), decidedBy: d.decidedBy, ...(d.reason ? { reason: String(d.reason) } : {}) };
        } else this.marker(event, 'info', `approval ${String(d.decision)} for ${String(d.callId)}`);
        return;
      }
      case 'tool/start': {
        const item = this.tools.get(String(d.callId));
        if (item) {
          item.events.push(event);
          item.started = true;
        }
        return;
      }
      case 'tool/output': {
        const item = this.tools.get(String(d.callId));
        if (item) {
          item.events.push(event);
          item.output += String(d.text ?? '');
        }
        return;
      }
      case 'tool/result': {
        const item = this.tools.get(String(d.callId));
        const block = d.message?.content?.[0];
        const result = {
          text: textOfToolResult(block),
          isError: block?.isError === true,
          ...(d.code ? { code: String(d.code) } : {}),
          ...(typeof d.durationMs === 'number' ? { durationMs: d.durationMs } : {}),
        };
        if (item) {
          item.events.push(event);
          item.result = result;
        } else {
          const orphan: ToolItem = {
            kind: 'tool',
            key: `i${event.seq}`,
            seq: event.seq,
            events: [event],
            callId: String(d.callId),
            name: '(unknown call)',
            arguments: '',
            started: true,
            output: '',
            result,
          };
          this.push(orphan);
        }
        return;
      }
      case 'llm/retry':
        // The failed attempt's partial reply stays as it was; the retry streams into a new one.
        if (this.live) {
          this.live.live = false;
          this.live.finish = 'retried';
          this.live = undefined;
        }
        this.marker(event, 'retry', `retry ${String(d.attempt)}/${String(d.maxRetries)} after ${String(d.delayMs)} ms`, failureText(d.failure));
        return;
      case 'compaction/start':
        this.marker(event, 'compaction', `compaction started (${String(d.trigger)}, ${String(d.messageCount)} messages)`);
        return;
      case 'compaction/summary':
        addUsage(this.state.usage, d.usage);
        if (this.turn) addUsage(this.turn.usage, d.usage);
        this.marker(event, 'compaction', `compaction summary by ${String(d.provider)}/${String(d.model)}`, String(d.summary ?? ''));
        return;
      case 'compaction/end':
        this.marker(
          event,
          d.outcome === 'failed' ? 'error' : 'compaction',
          `compaction ${String(d.outcome)}${typeof d.keptMessageCount === 'number' ? ` (${d.keptMessageCount} messages kept)` : ''}`,
          failureText(d.failure),
        );
        return;
      case 'surface/replace':
        this.marker(event, 'compaction', `messages ${String(d.start)}–${String(d.end)} replaced by ${Array.isArray(d.messages) ? d.messages.length : 0}`);
        return;
      case 'request/header': {
        const config = d.header?.config ?? {};
        const model = `${String(config.provider ?? '?')}/${String(config.model ?? '?')}`;
        const changed = model !== this.state.model;
        this.state.model = model;
        if (changed || d.reason === 'change') this.marker(event, 'model', `model ${model} (${String(d.reason)})`);
        return;
      }
      case 'session/title':
        this.state.title = String(d.title ?? '');
        return;
      case 'plugin/reload': {
        // A change of the running plugin stack (harness dev): marked where it happened, mid-reply too.
        const name = String(d.name ?? '?');
        const generation = typeof d.generation === 'number' ? ` (generation ${d.generation}${typeof d.reloadMs === 'number' ? `, ${d.reloadMs} ms` : ''})` : '';
        const keys = Array.isArray(d.configKeys) && d.configKeys.length > 0 ? ` · config: ${d.configKeys.map(String).join(', ')}` : '';
        if (d.outcome === 'failed') {
          const label =
            d.action === 'config'
              ? 'the config did not load (nothing changed)'
              : d.action === 'reload'
                ? `reload of ${name} failed${typeof d.generation === 'number' ? ` (generation ${d.generation} still serving)` : ''}`
                : `${String(d.action)} of ${name} failed`;
          this.marker(event, 'reload', `${label}${keys}`, failureText(d.failure));
        } else {
          const verb = d.action === 'load' ? 'loaded' : d.action === 'unload' ? 'unloaded' : 'reloaded';
          this.marker(event, 'reload', `${verb} ${name}${generation}${keys}`);
        }
        return;
      }
      case 'request/snapshot':
      case 'serve/turn-job':
        return;
      default:
        if (event.type.startsWith('plugin/'))
          this.marker(event, 'reload', `${event.type}${d.name ? ` ${String(d.name)}` : ''}${d.generation !== undefined ? ` (generation ${String(d.generation)})` : ''}`);
        else this.marker(event, 'info', event.type);
    }
  }

  /** The tool calls waiting for an approval answer. */
  pendingApprovals(): ToolItem[] {
    return [...this.tools.values()].filter((item) => item.requested !== undefined && item.approval === undefined && item.result === undefined);
  }

  /** The turn running now (started, not ended). */
  get openTurn(): Turn | undefined {
    return this.turn;
  }

  private chunk(event: JournalEvent): void {
    const chunk = event.data?.chunk ?? {};
    let item = this.live;
    if (item === undefined) {
      item = { kind: 'assistant', key: `i${event.seq}`, seq: event.seq, events: [], blocks: [], from: this.state.model ?? 'assistant', live: true };
      this.live = item;
      this.liveBlocks = new Map();
      this.push(item);
    }
    item.events.push(event);
    const index = Number(chunk.index ?? 0);
    if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta' || chunk.type === 'tool-call-delta') {
      let block = this.liveBlocks.get(index);
      if (block === undefined) {
        block = { type: chunk.type === 'text-delta' ? 'text' : chunk.type === 'reasoning-delta' ? 'reasoning' : 'tool-call', text: '' };
        this.liveBlocks.set(index, block);
        item.blocks = [...this.liveBlocks.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b);
      }
      if (chunk.type === 'tool-call-delta') {
        if (chunk.name) block.name = String(chunk.name);
        block.text += String(chunk.argumentsDelta ?? '');
      } else block.text += String(chunk.text ?? '');
    }
  }

  private marker(event: JournalEvent, tone: MarkerItem['tone'], label: string, detail?: string): void {
    this.push({ kind: 'marker', key: `i${event.seq}`, seq: event.seq, events: [event], tone, label, ...(detail ? { detail } : {}) });
  }

  private push(item: Item): void {
    if (this.step) this.step.items.push(item);
    else if (this.turn) this.turn.entries.push(item);
    // Between two turns (a reload, a /compact): after the turn before it, not at the top of the page.
    else if (this.state.turns.length > 0) this.state.turns.at(-1)!.entries.push(item);
    else this.state.preamble.push(item);
  }

  private ensureTurn(event: JournalEvent): Turn {
    if (this.turn) return this.turn;
    // A step outside a turn (a damaged or foreign journal): show it under a turn of its own.
    const turn: Turn = { turn: Number(event.data?.turn ?? 0), key: `t${event.seq}`, startSeq: event.seq, entries: [], events: [], usage: {} };
    this.state.turns.push(turn);
    this.turn = turn;
    return turn;
  }
}
