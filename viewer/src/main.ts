/**
 * The session viewer (issue 19): a page over the serve API. `/viewer/` lists the sessions;
 * `/viewer/?session=<id>` shows one as a timeline, live over SSE; `&at=<seq>` shows the state at
 * that seq as the server folds it (what `harness replay --at` prints). The token comes from the URL
 * fragment (`#token=…`, removed at once and kept in sessionStorage) or a form, and goes as a bearer.
 */
import { html, nothing, render, type TemplateResult } from 'lit';
import { live } from 'lit/directives/live.js';
import { Api, ApiError, type StreamStatus } from './api.ts';
import { formatCost, formatUsage, itemView, type RenderContext, stateMessageView } from './render.ts';
import { type JournalEvent, type Step, Timeline, totalTokens, type Turn, type Usage } from './timeline.ts';
import './style.css';

const TOKEN_KEY = 'harness-viewer-token';

interface SessionRow {
  readonly id: string;
  readonly title?: string;
  readonly cwd?: string;
  readonly turnCount: number;
  readonly usage: Usage;
  readonly costUsd?: number;
  readonly eventCount: number;
  readonly lastUpdateAtMs: number;
  readonly runningTurn?: { turn: number; startSeq: number };
  readonly importedFrom?: unknown;
  readonly error?: { code: string; message: string };
}

interface SessionInfo {
  readonly id: string;
  readonly cwd?: string;
  readonly title?: string;
  readonly lastSeq: number;
  readonly turnCount: number;
  readonly costUsd?: number;
  /** USD per turn number, when the server has prices (token-meter). */
  readonly turnCostUsd?: Readonly<Record<string, number>>;
  readonly runningTurn?: { turn: number; startSeq: number };
}

interface AtState {
  readonly seq: number;
  // biome-ignore lint/suspicious/noExplicitAny: the folded state as the server sends it.
  readonly state: any;
}

const app = {
  api: undefined as Api | undefined,
  tokenError: undefined as string | undefined,
  readOnly: true,
  sessions: undefined as SessionRow[] | undefined,
  error: undefined as string | undefined,
  notice: undefined as string | undefined,
  sessionId: undefined as string | undefined,
  info: undefined as SessionInfo | undefined,
  timeline: new Timeline(),
  status: 'connecting' as StreamStatus,
  stream: undefined as { close(): void } | undefined,
  at: undefined as number | undefined,
  atState: undefined as AtState | undefined,
  openRaw: new Set<string>(),
  prompt: '',
  sending: false,
};

const root = document.getElementById('app')!;
let frame = 0;
/** Draws at most once per animation frame (a live reply changes many times a frame). */
function schedule(): void {
  if (frame !== 0) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    render(page(), root);
  });
}

function readToken(): string | undefined {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const fromUrl = fragment.get('token');
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    // The token leaves the address bar (and the history) at once.
    history.replaceState(null, '', location.pathname + location.search);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

function failed(error: unknown): void {
  if (error instanceof ApiError && error.code === 'UNAUTHORIZED') {
    sessionStorage.removeItem(TOKEN_KEY);
    app.api = undefined;
    app.stream?.close();
    app.tokenError = 'The server did not accept the token.';
  } else app.error = error instanceof Error ? error.message : String(error);
  schedule();
}

async function start(): Promise<void> {
  const token = readToken();
  app.api = token ? new Api(token) : undefined;
  const params = new URLSearchParams(location.search);
  app.sessionId = params.get('session') ?? undefined;
  const at = params.get('at');
  app.at = at !== null && /^\d+$/.test(at) ? Number(at) : undefined;
  schedule();
  if (!app.api) return;
  try {
    const health = await app.api.get<{ readOnly?: boolean }>('/v1/health');
    app.readOnly = health.readOnly === true;
    if (app.sessionId) await openSession(app.sessionId);
    else await loadSessions();
  } catch (error) {
    failed(error);
  }
}

async function loadSessions(): Promise<void> {
  if (!app.api) return;
  try {
    app.sessions = (await app.api.get<{ sessions: SessionRow[] }>('/v1/sessions')).sessions;
    app.error = undefined;
  } catch (error) {
    failed(error);
  }
  schedule();
}

async function openSession(id: string): Promise<void> {
  const api = app.api!;
  app.info = (await api.get<{ session: SessionInfo }>(`/v1/sessions/${encodeURIComponent(id)}`)).session;
  document.title = `${app.info.title ?? id} · Harness viewer`;
  app.timeline = new Timeline();
  app.stream = api.stream(
    id,
    0,
    (events: JournalEvent[]) => {
      for (const event of events) app.timeline.add(event);
      // A turn ended: its cost (and the session's) is known now.
      if (events.some((event) => event.type === 'turn/end')) void refreshInfo(id);
      schedule();
    },
    (status) => {
      app.status = status;
      if (status === 'unauthorized') failed(new ApiError('UNAUTHORIZED', 'unauthorized', 401));
      schedule();
    },
  );
  if (app.at !== undefined) await loadAt(app.at);
  schedule();
}

async function refreshInfo(id: string): Promise<void> {
  try {
    app.info = (await app.api!.get<{ session: SessionInfo }>(`/v1/sessions/${encodeURIComponent(id)}`)).session;
  } catch (error) {
    failed(error);
  }
  schedule();
}

let atTimer: ReturnType<typeof setTimeout> | undefined;
async function loadAt(seq: number): Promise<void> {
  if (!app.api || !app.sessionId) return;
  try {
    app.atState = await app.api.get<AtState>(`/v1/sessions/${encodeURIComponent(app.sessionId)}/state?at=${seq}`);
    app.error = undefined;
  } catch (error) {
    failed(error);
  }
  schedule();
}

/** Moves the scrubber: the URL says `?at=`, the state follows (debounced while dragging). */
function scrubTo(seq: number | undefined): void {
  app.at = seq;
  const params = new URLSearchParams(location.search);
  if (seq === undefined) params.delete('at');
  else params.set('at', String(seq));
  history.replaceState(null, '', `${location.pathname}?${params}`);
  clearTimeout(atTimer);
  if (seq === undefined) app.atState = undefined;
  else atTimer = setTimeout(() => void loadAt(seq), 120);
  schedule();
}

async function act(what: () => Promise<unknown>): Promise<void> {
  app.notice = undefined;
  try {
    await what();
  } catch (error) {
    app.notice = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
  }
  schedule();
}

const ctx: RenderContext = {
  get openRaw() {
    return app.openRaw;
  },
  toggleRaw(key, open) {
    if (open === app.openRaw.has(key)) return;
    if (open) app.openRaw.add(key);
    else app.openRaw.delete(key);
    schedule();
  },
  get canAnswer() {
    return !app.readOnly && app.timeline.openTurn !== undefined;
  },
  answer(callId, decision) {
    void act(() => app.api!.post(`/v1/sessions/${encodeURIComponent(app.sessionId!)}/approvals/${encodeURIComponent(callId)}`, { decision }));
  },
};

// ── Templates ────────────────────────────────────────────────────────────────────────────────

function tokenForm(): TemplateResult {
  const submit = (e: Event): void => {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
    const token = input.value.trim();
    if (token === '') return;
    sessionStorage.setItem(TOKEN_KEY, token);
    app.tokenError = undefined;
    void start();
  };
  return html`<form class="token" @submit=${submit}>
    <h2>Server token</h2>
    <p>This page reads sessions through the server's API, which needs its token (printed by <code>harness serve</code> or <code>harness view</code>).</p>
    ${app.tokenError ? html`<p class="error" role="alert">${app.tokenError}</p>` : nothing}
    <label for="token">Token</label>
    <input id="token" name="token" type="password" autocomplete="off" required autofocus />
    <button type="submit">Open</button>
  </form>`;
}

function sessionList(): TemplateResult {
  const newSession = (): void =>
    void act(async () => {
      const { session } = await app.api!.post<{ session: { id: string } }>('/v1/sessions', {});
      location.assign(`?session=${encodeURIComponent(session.id)}`);
    });
  const rows = app.sessions;
  return html`<section aria-labelledby="sessions-h">
    <div class="bar">
      <h2 id="sessions-h">Sessions</h2>
      <button @click=${() => void loadSessions()}>Refresh</button>
      ${app.readOnly ? html`<span class="dim">read-only</span>` : html`<button @click=${newSession}>New session</button>`}
    </div>
    ${
      rows === undefined
        ? html`<p>Loading…</p>`
        : rows.length === 0
          ? html`<p>No sessions yet.</p>`
          : html`<table class="sessions">
            <thead><tr><th scope="col">Title</th><th scope="col">Workspace</th><th scope="col">Turns</th><th scope="col">Tokens</th><th scope="col">Cost</th><th scope="col">Last update</th><th scope="col">Live</th></tr></thead>
            <tbody>
              ${rows.map(
                (row) => html`<tr data-session-id=${row.id}>
                  <td><a href=${`?session=${encodeURIComponent(row.id)}`}>${row.title || row.id}</a>${row.error ? html` <span class="badge bad">${row.error.code}</span>` : nothing}</td>
                  <td class="dim">${row.cwd ?? ''}</td>
                  <td>${row.turnCount}</td>
                  <td title=${formatUsage(row.usage)}>${totalTokens(row.usage).toLocaleString('en')}</td>
                  <td>${formatCost(row.costUsd)}</td>
                  <td>${new Date(row.lastUpdateAtMs).toLocaleString()}</td>
                  <td>${row.runningTurn ? html`<span class="badge live" data-live>● live (turn ${row.runningTurn.turn})</span>` : nothing}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

function stepView(step: Step): TemplateResult {
  return html`<section class="step" data-step=${step.step} aria-label="Step ${step.step}">
    <h4>Step ${step.step}${step.open ? html` <span class="badge live">running</span>` : nothing}</h4>
    ${step.items.map((item) => itemView(item, ctx))}
  </section>`;
}

function turnView(turn: Turn): TemplateResult {
  const end = turn.end;
  return html`<article class="turn" data-turn=${turn.turn} aria-labelledby=${`turn-${turn.key}`}>
    <h3 id=${`turn-${turn.key}`}>
      Turn ${turn.turn}
      ${end ? html`<span class="badge ${end.reason === 'completed' ? 'ok' : 'warn'}">${end.reason}</span>` : html`<span class="badge live">running</span>`}
      <span class="dim usage">${formatUsage(turn.usage)}</span>
      ${app.info?.turnCostUsd?.[turn.turn] !== undefined ? html`<span class="dim cost">${formatCost(app.info.turnCostUsd[turn.turn])}</span>` : nothing}
    </h3>
    ${end?.failure ? html`<p class="error">${[end.failure.code, end.failure.message].filter(Boolean).join(': ')}</p>` : nothing}
    ${turn.entries.map((entry) => (entry.kind === 'step' ? stepView(entry) : itemView(entry, ctx)))}
  </article>`;
}

function scrubber(): TemplateResult {
  const last = Math.max(app.timeline.state.lastSeq, app.info?.lastSeq ?? 0);
  const value = app.at ?? last;
  const onInput = (e: Event): void => {
    const seq = Number((e.currentTarget as HTMLInputElement).value);
    scrubTo(seq >= last ? undefined : seq);
  };
  const onNumber = (e: Event): void => {
    const text = (e.currentTarget as HTMLInputElement).value;
    if (/^\d+$/.test(text)) scrubTo(Math.min(Number(text), last));
  };
  return html`<div class="scrubber" role="group" aria-label="Seq scrubber">
    <label for="seq">Seq</label>
    <input id="seq" type="range" min="0" max=${last} .value=${live(String(value))} @input=${onInput} aria-valuetext=${app.at === undefined ? `live, seq ${last}` : `seq ${value} of ${last}`} />
    <input id="seq-number" type="number" min="0" max=${last} .value=${live(String(value))} @change=${onNumber} aria-label="Seq number" />
    <span class="dim">of ${last}</span>
    ${app.at !== undefined ? html`<button @click=${() => scrubTo(undefined)}>Back to live</button>` : html`<span class="dim">showing everything</span>`}
  </div>`;
}

function atView(): TemplateResult {
  const at = app.atState;
  if (at === undefined || at.seq !== app.at) return html`<p>Loading the state at seq ${app.at}…</p>`;
  const state = at.state ?? {};
  const messages: unknown[] = Array.isArray(state.messages) ? state.messages : [];
  const open = state.openTurn;
  return html`<section class="at" data-at=${at.seq} aria-label="State at seq ${at.seq}">
    <h3>State at seq ${at.seq}</h3>
    <dl class="facts">
      <dt>Turns</dt><dd>${state.turnCount ?? 0}${open ? ` · turn ${open.turn} open${open.step ? `, step ${open.step}${open.stepOpen ? ' running' : ''}` : ''}` : ''}</dd>
      <dt>Usage</dt><dd>${formatUsage(state.usage)}</dd>
      ${state.header ? html`<dt>Model</dt><dd>${String(state.header.config?.provider ?? '?')}/${String(state.header.config?.model ?? '?')}</dd>` : nothing}
      ${
        Array.isArray(state.pendingToolCalls) && state.pendingToolCalls.length > 0
          ? html`<dt>Pending</dt><dd>${state.pendingToolCalls.map((p: { name?: string; callId?: string }) => `${p.name} (${p.callId})`).join(', ')}</dd>`
          : nothing
      }
      <dt>Messages</dt><dd>${messages.length}</dd>
    </dl>
    <div class="messages">${messages.map((message, index) => stateMessageView(message, index))}</div>
  </section>`;
}

function composer(): TemplateResult | typeof nothing {
  if (app.readOnly) return nothing;
  const running = app.timeline.openTurn !== undefined;
  const send = (e: Event): void => {
    e.preventDefault();
    const prompt = app.prompt.trim();
    if (prompt === '' || app.sending) return;
    app.sending = true;
    void act(async () => {
      try {
        await app.api!.post(`/v1/sessions/${encodeURIComponent(app.sessionId!)}/turns`, { prompt });
        app.prompt = '';
      } finally {
        app.sending = false;
      }
    });
  };
  const abort = (): void => void act(() => app.api!.post(`/v1/sessions/${encodeURIComponent(app.sessionId!)}/abort`, {}));
  return html`<form class="composer" @submit=${send} aria-label="Next turn">
    <label for="prompt">Prompt</label>
    <textarea
      id="prompt"
      rows="3"
      .value=${live(app.prompt)}
      @input=${(e: Event) => (app.prompt = (e.currentTarget as HTMLTextAreaElement).value)}
      @keydown=${(e: KeyboardEvent) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) send(e);
      }}
      placeholder="What should the agent do next? (Ctrl+Enter sends)"
    ></textarea>
    <div class="bar">
      <button type="submit" ?disabled=${running || app.sending}>Send</button>
      <button type="button" class="deny" ?disabled=${!running} @click=${abort}>Abort</button>
    </div>
  </form>`;
}

function sessionPage(): TemplateResult {
  const t = app.timeline.state;
  const info = app.info;
  const running = app.timeline.openTurn !== undefined;
  return html`<section class="session" data-session-id=${app.sessionId ?? ''} data-last-seq=${t.lastSeq} data-event-count=${t.eventCount} data-stream=${app.status}>
    <div class="bar">
      <a href="./">← Sessions</a>
      <h2>${t.title ?? info?.title ?? app.sessionId}</h2>
      ${running ? html`<span class="badge live" data-live>● live</span>` : nothing}
      <span class="dim" role="status">stream: ${app.status}</span>
    </div>
    <dl class="facts">
      <dt>Session</dt><dd><code>${app.sessionId}</code></dd>
      ${info?.cwd ? html`<dt>Workspace</dt><dd><code>${info.cwd}</code></dd>` : nothing}
      ${t.model ? html`<dt>Model</dt><dd>${t.model}</dd>` : nothing}
      <dt>Turns</dt><dd>${t.turns.length}</dd>
      <dt>Usage</dt><dd data-total-usage>${formatUsage(t.usage)}</dd>
      <dt>Cost</dt><dd data-total-cost>${formatCost(info?.costUsd)}</dd>
      <dt>Events</dt><dd>${t.eventCount}</dd>
    </dl>
    ${scrubber()}
    ${app.notice ? html`<p class="error" role="alert">${app.notice}</p>` : nothing}
    ${
      app.at !== undefined
        ? atView()
        : html`<div class="timeline">
          ${t.preamble.map((item) => itemView(item, ctx))}
          ${t.turns.map(turnView)}
        </div>`
    }
    ${composer()}
  </section>`;
}

function page(): TemplateResult {
  return html`<header class="top">
      <h1><a href="./">Harness</a> <span class="dim">session viewer</span></h1>
    </header>
    <main id="main" tabindex="-1">
      ${app.error ? html`<p class="error" role="alert">${app.error}</p>` : nothing}
      ${!app.api ? tokenForm() : app.sessionId ? sessionPage() : sessionList()}
    </main>`;
}

void start();
