/**
 * The token footer of `run`, `chat` and `dev`: what this turn used and what the whole session has
 * used, with cost when the config loads `token-meter` (its price table: `ctx.tokenMeter.cost`).
 *
 * Both come from the journal, the one source of truth: the session's past is read from it once when
 * a session is resumed, and each turn adds the usage of its `assistant/message` and
 * `compaction/summary` events as they are journaled. So the footer means the same whether the
 * session is new, resumed, or one turn of many in a chat, and whether `token-meter` is loaded or not.
 */
import { readJournal, type AnySessionEvent, type ForwardedEvent, type Harness, type LineSource, type TokenUsage } from '../runtime/index.ts';
import type { Io } from './env.ts';
import { addUsage, formatCost, formatUsage } from './format.ts';

interface RequestUsage {
  readonly provider: string;
  readonly model: string;
  readonly usage: TokenUsage;
}

/** Usage of the requests of a turn, or of a session. */
class Requests {
  readonly list: RequestUsage[] = [];
  readonly totals: Record<string, number> = {};

  add(request: RequestUsage): void {
    this.list.push(request);
    addUsage(this.totals, request.usage);
  }
}

/** The request an event reports usage for, if it does. */
function requestOf(event: AnySessionEvent): RequestUsage | undefined {
  if (event.type === 'assistant/message') {
    const { message, usage } = event.data;
    if (usage === undefined) return undefined;
    const source = message.source as { provider?: string; model?: string };
    return { provider: source.provider ?? '?', model: source.model ?? '?', usage };
  }
  if (event.type === 'compaction/summary') {
    const { provider, model, usage } = event.data;
    return usage === undefined ? undefined : { provider, model, usage };
  }
  return undefined;
}

/**
 * A child turn's usage as one request (`subagent/end`, at the model its `subagent/spawn` named). Only
 * read from a journal: live, the child's own `assistant/message` events come forwarded instead.
 */
function subagentRequestOf(event: AnySessionEvent, childModels: Map<string, { provider: string; model: string }>): RequestUsage | undefined {
  const type = event.type as string;
  const data = event.data as unknown as { childSessionId?: string; provider?: string; model?: string; usage?: TokenUsage };
  if (type === 'subagent/spawn' && typeof data.childSessionId === 'string' && typeof data.provider === 'string' && typeof data.model === 'string') {
    childModels.set(data.childSessionId, { provider: data.provider, model: data.model });
  }
  if (type !== 'subagent/end' || typeof data.childSessionId !== 'string' || data.usage === undefined || Object.keys(data.usage).length === 0) return undefined;
  return { ...(childModels.get(data.childSessionId) ?? { provider: '?', model: '?' }), usage: data.usage };
}

export class UsageTally {
  private readonly session = new Requests();
  private turn = new Requests();
  private turnCount = 0;

  /** A tally for a resumed session: its past usage, read from its journal once (a new one starts with `new UsageTally()`). */
  static async of(journal: string | LineSource): Promise<UsageTally> {
    const tally = new UsageTally();
    // A subagent's usage is in its own journal; the parent's `subagent/end` (the subagents plugin's record) sums each child turn.
    const childModels = new Map<string, { provider: string; model: string }>();
    for await (const event of readJournal(journal)) {
      if (event.type === 'turn/start') tally.turnCount++;
      const request = requestOf(event) ?? subagentRequestOf(event, childModels);
      if (request) tally.session.add(request);
    }
    return tally;
  }

  /** Starts counting a new turn. */
  startTurn(): void {
    this.turn = new Requests();
  }

  /** Counts an event of the running turn (a subagent's, marked with its `origin`, adds its usage only). */
  add(event: ForwardedEvent): void {
    if (event.type === 'turn/start' && event.origin === undefined) this.turnCount++;
    const request = requestOf(event);
    if (request === undefined) return;
    this.turn.add(request);
    this.session.add(request);
  }

  /**
   * Two lines: `tokens  this turn: …` and `        session:   … (N turns)`, each with its cost when
   * `token-meter` is loaded (`cost unknown`, with where prices live, for a model without a price).
   */
  footer(harness: Harness, io: Io): string {
    const meter = harness.ctx.tokenMeter;
    const describe = (requests: Requests): string => {
      const usage = formatUsage(requests.totals as TokenUsage);
      if (meter === undefined || requests.list.length === 0) return usage;
      let usd = 0;
      const unpriced: RequestUsage[] = [];
      for (const request of requests.list) {
        const cost = meter.cost(request.provider, request.model, request.usage);
        if (cost === undefined) unpriced.push(request);
        else usd += cost;
      }
      if (unpriced.length === 0) return `${usage} · cost ${formatCost(usd)}`;
      const last = unpriced.at(-1)!;
      const hint = `no price for ${last.provider}/${last.model}; prices live in token-meter's \`prices\` in the config`;
      if (unpriced.length < requests.list.length) return `${usage} · cost ≥ ${formatCost(usd)} (${unpriced.length} of ${requests.list.length} requests unpriced: ${hint})`;
      return `${usage}${io.c.dim(` · cost unknown (${hint})`)}`;
    };
    const turns = `${this.turnCount} turn${this.turnCount === 1 ? '' : 's'}`;
    return `tokens  this turn: ${describe(this.turn)}\n        session:   ${describe(this.session)} (${turns})`;
  }
}
