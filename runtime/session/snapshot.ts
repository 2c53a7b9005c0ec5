/**
 * Model-visible requests in the journal (DESIGN "Replay": a journal as a test cassette).
 *
 * Per model call the agent loop journals `request/snapshot`: what the adapter received, after every
 * `llm/stream` middleware and the replay discipline — call config, system prompt, tool definitions
 * with their JSON Schemas, and the messages (content and replay state) — plus a hash of its
 * canonical form. It is cheap: config, system and tools are written only when they changed since the
 * writer's previous snapshot, and messages as a delta against the previous snapshot's list (`keep`
 * its first entries, then `add`), each added message by id when it is the journaled surface message
 * of that id, inline only when a middleware made or rewrote it.
 *
 * The canonical form is what the model sees and nothing else: message ids, sources and clocks are
 * not in it, object keys are sorted, undefined fields dropped. {@link firstDifference} names the
 * first differing path of two canonical requests (`tools[1].description`).
 */
import { createHash, type Hash } from 'node:crypto';
import { sharedPrefixLength } from '../llm/prefix.ts';
import type { GenerateOptions, LlmCallConfig, Message, ToolSpec } from '../llm/types.ts';
import type { AnySessionEvent, RequestSnapshot, SessionEvent, SnapshotMessage } from './events.ts';

// The event data types live with the event map (events.ts), so that the two files form no cycle.
export type { RequestSnapshot, SnapshotMessage };

/** The model-visible part of one message. */
export interface CanonicalMessage {
  readonly role: Message['role'];
  readonly content: Message['content'];
  readonly replayState?: unknown;
}

/** A model-visible request, canonical: compared field by field and hashed. */
export interface CanonicalRequest {
  readonly config: LlmCallConfig;
  readonly system?: string;
  readonly tools: readonly ToolSpec[];
  readonly messages: readonly CanonicalMessage[];
}

const CONFIG_KEYS = ['provider', 'model', 'reasoningEffort', 'temperature', 'maxTokens', 'stop'] as const;

function canonicalConfig(options: LlmCallConfig): LlmCallConfig {
  const out: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) if (options[key] !== undefined) out[key] = options[key];
  return out as unknown as LlmCallConfig;
}

/** The model-visible part of a message: role, content and (for a model's reply) its replay state — no id, source or clock. */
export function canonicalMessage(message: Message): CanonicalMessage {
  const replayState = message.source?.kind === 'model' ? message.source.replayState : undefined;
  return replayState === undefined ? { role: message.role, content: message.content } : { role: message.role, content: message.content, replayState };
}

/** The canonical form of a request (what the model sees). */
export function canonicalRequest(options: GenerateOptions): CanonicalRequest {
  return {
    config: canonicalConfig(options),
    ...(options.system === undefined ? {} : { system: options.system }),
    tools: (options.tools ?? []).map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
    messages: options.messages.map(canonicalMessage),
  };
}

/** JSON with sorted keys and no undefined fields. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return value === undefined ? 'null' : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  const keys = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** Canonical JSON per message object (messages are frozen: one serialisation each, not one per call). */
const messageJson = new WeakMap<object, string>();

function jsonOfMessage(message: Message): string {
  let json = messageJson.get(message);
  if (json === undefined) {
    json = canonicalJson(canonicalMessage(message));
    if (Object.isFrozen(message)) messageJson.set(message, json);
  }
  return json;
}

/** sha256 (hex) of the canonical request. Equal for requests equal in everything the model sees. */
export function requestHash(options: GenerateOptions): string {
  const hash = createHash('sha256');
  const canonical = canonicalRequest({ ...options, messages: [] });
  hash.update(canonicalJson({ config: canonical.config, system: canonical.system ?? null, tools: canonical.tools }));
  for (const message of options.messages) hash.update(`\n${jsonOfMessage(message)}`);
  return hash.digest('hex');
}

/** Hash of a reconstructed canonical request (same value as {@link requestHash} of the request it came from). */
export function canonicalHash(request: CanonicalRequest): string {
  const hash = createHash('sha256');
  hash.update(canonicalJson({ config: request.config, system: request.system ?? null, tools: request.tools }));
  for (const message of request.messages) hash.update(`\n${canonicalJson(message)}`);
  return hash.digest('hex');
}

/**
 * What a {@link RequestRecorder} or {@link RequestHasher} keeps of the previous request: its header
 * (canonical JSON of config, system prompt and tools), its messages, and the sha256 state over
 * both (see {@link requestHash}), for the next request to continue.
 */
interface LastRequest {
  readonly header: RequestHeader;
  readonly messages: readonly Message[];
  readonly hash: Hash;
}

/** A request's call config, system prompt and tools, canonical, with their canonical JSON. */
interface RequestHeader {
  readonly config: LlmCallConfig;
  readonly configJson: string;
  readonly system: string | null;
  readonly tools: readonly ToolSpec[];
  readonly toolsJson: string;
}

function headerOf(request: GenerateOptions): RequestHeader {
  const config = canonicalConfig(request);
  const tools = canonicalRequest({ ...request, messages: [] }).tools;
  return { config, configJson: canonicalJson(config), system: request.system ?? null, tools, toolsJson: canonicalJson(tools) };
}

function sameHeader(a: RequestHeader, b: RequestHeader): boolean {
  return a.configJson === b.configJson && a.system === b.system && a.toolsJson === b.toolsJson;
}

/**
 * The sha256 state over `header` and `messages`: the previous request's state continued over the
 * messages after `keep` when the header is the same and `keep` (canonically equal messages, said
 * by the caller) is the previous request's whole list; else hashed anew.
 */
function continuedHash(last: LastRequest | undefined, header: RequestHeader, messages: readonly Message[], keep: number): Hash {
  const continues = last !== undefined && keep === last.messages.length && sameHeader(last.header, header);
  const hash = continues ? last.hash.copy() : headerHash(header.configJson, header.system, header.toolsJson);
  for (let i = continues ? keep : 0; i < messages.length; i++) hash.update(`\n${jsonOfMessage(messages[i]!)}`);
  return hash;
}

/** The request to keep for the next one; a list that is not frozen may change in place, so its items are copied. */
function lastRequest(header: RequestHeader, messages: readonly Message[], hash: Hash): LastRequest {
  return { header, messages: Object.isFrozen(messages) ? messages : messages.slice(), hash };
}

/**
 * Builds the `request/snapshot` of each call as a delta against the previous one (one writer per
 * session and process: after a resume the first snapshot is complete again).
 *
 * Its cost per call is O(messages added since the previous snapshot) apart from one pointer
 * comparison per kept message: a request carries the whole history, so anything more per kept
 * message (a map of the surface, hashing every message again) makes a long session's turns slower
 * and slower (3,000 turns: ~3x the CPU per turn of turn 300). The hash continues the previous
 * request's hash state (`Hash.copy()`) when the new request keeps all of its messages.
 */
export class RequestRecorder {
  private last: LastRequest | undefined;

  /**
   * @param surface the journaled surface when the call was made: a message that is the very object
   *   of this list is written by id.
   */
  snapshot(turn: number, step: number, request: GenerateOptions, surface: readonly Message[]): RequestSnapshot {
    const header = headerOf(request);
    const last = this.last;
    const messages = request.messages;
    let keep = 0;
    if (last !== undefined) {
      keep = sharedPrefixLength(last.messages, messages);
      while (keep < messages.length && keep < last.messages.length && sameMessage(messages[keep]!, last.messages[keep]!)) keep++;
    }
    const add = messages.slice(keep).map((message): SnapshotMessage => {
      const stored = journaledMessage(surface, message.id);
      if (stored === message) return message.id;
      // The seam's replay discipline sends a copy without the replay state.
      if (stored !== undefined && stored.content === message.content && stored.role === message.role && message.source?.kind === 'model' && message.source.replayState === undefined)
        return { id: message.id, replayState: false };
      return message;
    });
    // Kept messages are canonically equal to the previous request's (sameMessage): its hash state goes on.
    const hash = continuedHash(last, header, messages, keep);
    this.last = lastRequest(header, messages, hash);
    return {
      turn,
      step,
      hash: hash.copy().digest('hex'),
      ...(last?.header.configJson === header.configJson ? {} : { config: header.config }),
      ...(last !== undefined && last.header.system === header.system ? {} : { system: header.system }),
      ...(last?.header.toolsJson === header.toolsJson ? {} : { tools: header.tools }),
      messages: { keep, add },
    };
  }
}

/**
 * {@link requestHash} of one conversation's successive requests, in O(messages added) per request:
 * it remembers the previous request and continues its sha256 state (`Hash.copy()`) over the
 * messages the new request keeps. The value is always exactly `requestHash(request)`: a kept
 * message is one the previous request had at the same index, the very object and frozen (a frozen
 * message's canonical form cannot have changed); from the first other message on, and after any
 * change of config, system prompt or tools, it hashes again. A cassette compares each replayed
 * request with its recording this way (a re-run of a long session would otherwise hash its whole
 * history per call).
 */
export class RequestHasher {
  private last: (LastRequest & { /** Every message before this index was frozen (and so still is). */ readonly frozenUpTo: number }) | undefined;

  /** sha256 (hex) of the canonical request, as {@link requestHash}. */
  hash(request: GenerateOptions): string {
    const header = headerOf(request);
    const messages = request.messages;
    const last = this.last;
    // Only frozen messages are trusted by pointer: another may have been changed in place.
    const keep = last !== undefined && sameHeader(last.header, header) ? Math.min(sharedPrefixLength(last.messages, messages), last.frozenUpTo) : 0;
    const hash = continuedHash(last, header, messages, keep);
    let frozenUpTo = keep;
    while (frozenUpTo < messages.length && Object.isFrozen(messages[frozenUpTo])) frozenUpTo++;
    this.last = { ...lastRequest(header, messages, hash), frozenUpTo };
    return hash.copy().digest('hex');
  }
}

/** The surface's message with this id (the last one, should ids repeat); the added messages are near its end. */
function journaledMessage(surface: readonly Message[], id: string): Message | undefined {
  for (let i = surface.length - 1; i >= 0; i--) if (surface[i]!.id === id) return surface[i];
  return undefined;
}

/** A sha256 state over a request's header, as {@link requestHash} starts. */
function headerHash(configJson: string, system: string | null, toolsJson: string): Hash {
  return createHash('sha256').update(`{"config":${configJson},"system":${canonicalJson(system)},"tools":${toolsJson}}`);
}

/** The same message object, or the same stored content and replay state (the seam's copy of it). */
function sameMessage(a: Message, b: Message): boolean {
  if (a === b) return true;
  const ra = a.source?.kind === 'model' ? a.source.replayState : undefined;
  const rb = b.source?.kind === 'model' ? b.source.replayState : undefined;
  return a.id === b.id && a.role === b.role && a.content === b.content && ra === rb;
}

/** A recorded request rebuilt from the snapshots, or why it cannot be. */
export type RecordedRequest =
  | { readonly ok: true; readonly hash: string; readonly request: CanonicalRequest; readonly seq: number }
  | { readonly ok: false; readonly hash: string; readonly problem: string; readonly seq: number };

/**
 * One `request/snapshot` as read, cheap to keep: its hash, seq, call config and message count, and
 * {@link RecordedSnapshot.request} to rebuild the whole canonical request. Keeping one per model
 * call of a long session costs O(the messages each call added), not O(its history): a request holds
 * the whole history, and a list per call made a 10,000-turn journal's calls hold ~10^8 references.
 */
export type RecordedSnapshot = (
  | { readonly ok: true; readonly config: LlmCallConfig; request(): Extract<RecordedRequest, { ok: true }> }
  | { readonly ok: false; readonly problem: string; request(): Extract<RecordedRequest, { ok: false }> }
) & {
  /** The recorded hash of the canonical request (sha256, hex). */
  readonly hash: string;
  readonly seq: number;
  /** How many messages the request has. */
  readonly messageCount: number;
  /** The canonical request (or why it cannot be rebuilt), built anew on each call: O(its messages); not kept. */
  request(): RecordedRequest;
};

/**
 * A request's message list as its last node: the lists of successive snapshots share their common
 * prefix, so a snapshot costs one node per message it adds, and keeping `keep` messages walks back
 * from the previous list's end (each node is walked past at most once: linear overall).
 */
interface MessageNode {
  readonly message: Message;
  readonly previous: MessageNode | undefined;
  /** The list's length up to and with this node. */
  readonly length: number;
}

function messagesOf(tail: MessageNode | undefined): Message[] {
  const out = new Array<Message>(tail?.length ?? 0);
  for (let node = tail; node !== undefined; node = node.previous) out[node.length - 1] = node.message;
  return out;
}

class Snapshot {
  readonly ok: boolean;
  readonly config: LlmCallConfig | undefined;
  readonly problem: string | undefined;
  readonly #system: string | null | undefined;
  readonly #tools: readonly ToolSpec[] | undefined;
  readonly #tail: MessageNode | undefined;

  constructor(
    readonly hash: string,
    readonly seq: number,
    parts: { config?: LlmCallConfig; system?: string | null; tools?: readonly ToolSpec[]; tail: MessageNode | undefined },
    problem: string | undefined,
  ) {
    this.ok = problem === undefined;
    this.problem = problem;
    this.config = problem === undefined ? parts.config : undefined;
    this.#system = parts.system;
    this.#tools = parts.tools;
    this.#tail = parts.tail;
  }

  get messageCount(): number {
    return this.#tail?.length ?? 0;
  }

  request(): RecordedRequest {
    if (!this.ok) return { ok: false, hash: this.hash, problem: this.problem!, seq: this.seq };
    const system = this.#system;
    const request: CanonicalRequest = {
      config: this.config!,
      ...(system === null || system === undefined ? {} : { system }),
      tools: this.#tools!,
      messages: messagesOf(this.#tail).map(sharedCanonicalMessage),
    };
    return { ok: true, hash: this.hash, request, seq: this.seq };
  }
}

/**
 * Rebuilds each `request/snapshot` of a journal (in order) into its canonical request. Feed it every
 * event; `push` returns the rebuilt request for a snapshot event, else undefined; `read` returns it
 * unbuilt ({@link RecordedSnapshot}), in O(the messages the snapshot adds).
 */
export class SnapshotReader {
  /**
   * The journaled surface, as the fold builds it (appends, `surface/replace` splices): a snapshot
   * names a message by id only when it is the surface's message of that id (see
   * {@link RequestRecorder.snapshot}), so a message a compaction replaced is never needed again
   * and is let go — a reader kept for a long session (the otel plugin's, with content capture)
   * holds its surface and the last request, not every message the session ever had.
   */
  private readonly surface: Message[] = [];
  /** The surface's messages by id (the last of an id); one removed while an older one of its id stays is found in `surface`. */
  private readonly byId = new Map<string, Message>();
  private previous: { config?: LlmCallConfig; system?: string | null; tools?: readonly ToolSpec[]; tail: MessageNode | undefined } = { tail: undefined };

  push(event: AnySessionEvent): RecordedRequest | undefined {
    return this.read(event)?.request();
  }

  read(event: AnySessionEvent): RecordedSnapshot | undefined {
    switch (event.type) {
      case 'user/message':
      case 'assistant/message':
      case 'tool/result':
        this.append(event.data.message);
        return undefined;
      case 'surface/replace':
        this.replace(event as SessionEvent<'surface/replace'>);
        return undefined;
      case 'request/snapshot':
        return this.rebuild(event as SessionEvent<'request/snapshot'>);
      default:
        return undefined;
    }
  }

  private append(message: Message | undefined): void {
    if (message === undefined) return;
    this.surface.push(message);
    if (typeof message.id === 'string') this.byId.set(message.id, message);
  }

  /** `[start, end)` of the surface replaced (clamped: a reader that joined mid-session holds less of it). */
  private replace(event: SessionEvent<'surface/replace'>): void {
    const { start, end, messages } = event.data;
    const from = Math.min(Math.max(0, start), this.surface.length);
    const to = Math.min(Math.max(from, end), this.surface.length);
    const removed = this.surface.splice(from, to - from, ...messages);
    for (const message of removed) if (typeof message.id === 'string' && this.byId.get(message.id) === message) this.byId.delete(message.id);
    for (const message of messages) if (typeof message.id === 'string') this.byId.set(message.id, message);
  }

  private stored(id: string): Message | undefined {
    return this.byId.get(id) ?? journaledMessage(this.surface, id);
  }

  private rebuild(event: SessionEvent<'request/snapshot'>): RecordedSnapshot {
    const data = event.data;
    const previous = this.previous;
    const config = data.config ?? previous.config;
    const system = data.system !== undefined ? data.system : previous.system;
    const tools = data.tools ?? previous.tools;
    const previousLength = previous.tail?.length ?? 0;
    const keep = Math.min(data.messages.keep, previousLength);
    let tail = previous.tail;
    while (tail !== undefined && tail.length > keep) tail = tail.previous;
    let problem = data.messages.keep > previousLength ? `it keeps ${data.messages.keep} messages of a previous snapshot that has ${previousLength}` : undefined;
    for (const entry of data.messages.add) {
      const id = typeof entry === 'string' ? entry : 'replayState' in entry && entry.replayState === false ? entry.id : undefined;
      let message: Message;
      if (id === undefined) message = entry as Message;
      else {
        const stored = this.stored(id);
        if (stored === undefined) {
          problem ??= `it names message ${id}, which the journal does not have before seq ${event.seq}`;
          continue;
        }
        message = typeof entry === 'string' || stored.source?.kind !== 'model' ? stored : withoutReplayState(stored);
      }
      tail = { message, previous: tail, length: (tail?.length ?? 0) + 1 };
    }
    if (config === undefined || tools === undefined || system === undefined) problem ??= 'an earlier snapshot with its config, system and tools is missing';
    this.previous = { ...(config ? { config } : {}), ...(system !== undefined ? { system } : {}), ...(tools ? { tools } : {}), tail };
    return new Snapshot(data.hash, event.seq, this.previous, problem) as unknown as RecordedSnapshot;
  }
}

/**
 * One canonical form per message object for every rebuilt request that holds it: each snapshot's
 * request lists the whole history, and a new object per message per snapshot made a 2,000-turn
 * journal's recorded calls hold ~4 million of them (~200 MB).
 */
const canonicalOf = new WeakMap<Message, CanonicalMessage>();

function sharedCanonicalMessage(message: Message): CanonicalMessage {
  let canonical = canonicalOf.get(message);
  if (canonical === undefined) {
    canonical = Object.freeze(canonicalMessage(message));
    canonicalOf.set(message, canonical);
  }
  return canonical;
}

function withoutReplayState(message: Message): Message {
  const { replayState: _dropped, ...source } = message.source as Message['source'] & { replayState?: unknown };
  return { ...message, source } as Message;
}

/** A difference between two values: its path (`tools[1].description`, `` for the root) and both values. */
export interface Difference {
  readonly path: string;
  readonly recorded: unknown;
  readonly actual: unknown;
}

/**
 * The first path where `actual` differs from `recorded` (depth first, arrays by index, object keys
 * sorted), or undefined when they are equal. `matches(recorded, actual)` may accept a leaf (a
 * recorded `{{…}}` placeholder matches anything).
 */
export function firstDifference(recorded: unknown, actual: unknown, matches: (recorded: unknown, actual: unknown) => boolean = Object.is, path = ''): Difference | undefined {
  if (matches(recorded, actual)) return undefined;
  const bothArrays = Array.isArray(recorded) && Array.isArray(actual);
  const bothObjects = !bothArrays && isPlainObject(recorded) && isPlainObject(actual);
  if (bothArrays) {
    const a = recorded as unknown[];
    const b = actual as unknown[];
    // Lists of named things (tools): a removed, added or reordered one is named, not its neighbour's fields.
    if (a.length > 0 && b.length > 0 && a.every(isNamed) && b.every(isNamed)) {
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        const ra = (a[i] as { name: string }).name;
        const rb = (b[i] as { name: string }).name;
        if (!matches(ra, rb)) return { path: `${path}[${i}].name`, recorded: ra, actual: rb };
      }
    }
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const found = firstDifference(a[i], b[i], matches, `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    if (a.length === b.length) return undefined;
    const i = Math.min(a.length, b.length);
    return { path: `${path}[${i}]`, recorded: i < a.length ? a[i] : ABSENT, actual: i < b.length ? b[i] : ABSENT };
  }
  if (bothObjects) {
    const a = recorded as Record<string, unknown>;
    const b = actual as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((key) => a[key] !== undefined || b[key] !== undefined).sort();
    for (const key of keys) {
      const sub = /^[A-Za-z_$][\w$]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`;
      if (!(key in a) || a[key] === undefined) return { path: sub, recorded: ABSENT, actual: b[key] };
      if (!(key in b) || b[key] === undefined) return { path: sub, recorded: a[key], actual: ABSENT };
      const found = firstDifference(a[key], b[key], matches, sub);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  return { path, recorded, actual };
}

/** Marks a value that is not there (a missing key or array item) in a {@link Difference}. */
export const ABSENT: unique symbol = Symbol('absent');

function isNamed(value: unknown): boolean {
  return isPlainObject(value) && typeof value.name === 'string';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One side of a difference for a message: JSON, cut to `max` characters (from `from` on, after a `…`). */
export function showValue(value: unknown, max = 120, from = 0): string {
  if (value === ABSENT) return '(absent)';
  let text = value === undefined ? 'undefined' : JSON.stringify(value);
  if (from > 0) text = `…${text.slice(from)}`;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * `<recorded> ≠ <actual>` for a difference; two long strings are shown from a little before their
 * first differing character.
 */
export function showDifference(difference: Difference, max = 120): string {
  const { recorded, actual } = difference;
  let from = 0;
  if (typeof recorded === 'string' && typeof actual === 'string') {
    const a = JSON.stringify(recorded);
    const b = JSON.stringify(actual);
    let common = 0;
    while (common < a.length && common < b.length && a[common] === b[common]) common++;
    if (common > 40 && (a.length > max || b.length > max)) from = common - 30;
  }
  return `${showValue(recorded, max, from)} ≠ ${showValue(actual, max, from)}`;
}
