/**
 * Templates of the timeline's items and of messages (lit-html). Every string from a journal — model
 * text, tool arguments and output, error messages — goes into the DOM as text through lit's text
 * bindings; the one exception is markdown, which goes through markdown.ts (raw HTML off, sanitised).
 * No journal string is ever put into an attribute that could carry a URL or a script.
 */
import { createTwoFilesPatch } from 'diff';
import { html, nothing, type TemplateResult } from 'lit';
import { unsafeHTML } from 'lit/directives/unsafe-html.js';
import { markdownHtml } from './markdown.ts';
import { type Block, type Item, type JournalEvent, type MarkerItem, type MessageItem, type ToolItem, textOfToolResult, sourceLabel, totalTokens, type Usage } from './timeline.ts';

/** Above this many lines (or characters) an output is folded behind its first lines. */
const FOLD_LINES = 24;
const FOLD_CHARS = 4000;
const PREVIEW_LINES = 8;

export interface RenderContext {
  /** Keys of items whose raw events are shown. */
  readonly openRaw: ReadonlySet<string>;
  toggleRaw(key: string, open: boolean): void;
  /** Answering approvals is possible (harness serve, the turn is running). */
  readonly canAnswer: boolean;
  answer(callId: string, decision: 'allow' | 'deny'): void;
}

export function formatUsage(usage: Usage | undefined): string {
  if (!usage || totalTokens(usage) === 0) return 'no usage';
  const parts = [`${totalTokens(usage).toLocaleString('en')} tokens`, `in ${(usage.inputTokens ?? 0).toLocaleString('en')}`, `out ${(usage.outputTokens ?? 0).toLocaleString('en')}`];
  if (usage.cacheReadTokens) parts.push(`cache read ${usage.cacheReadTokens.toLocaleString('en')}`);
  if (usage.reasoningTokens) parts.push(`reasoning ${usage.reasoningTokens.toLocaleString('en')}`);
  return parts.join(' · ');
}

export function formatCost(costUsd: number | undefined): string {
  if (costUsd === undefined) return '—';
  return costUsd < 0.01 ? `$${costUsd.toFixed(4)}` : `$${costUsd.toFixed(2)}`;
}

function isDiff(text: string): boolean {
  return /^@@ .* @@/m.test(text) && /^(---|\+\+\+) /m.test(text);
}

function lineClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) return 'file';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return 'ctx';
}

/** A unified diff, one line per row, additions and deletions marked (by class and by their sign). */
export function diffView(text: string): TemplateResult {
  return html`<pre class="diff" data-diff>${text.split('\n').map((line) => html`<span class=${lineClass(line)}>${line}\n</span>`)}</pre>`;
}

/** Text as-is; a long one folded behind its first lines (a keyboard toggles it like any details). */
export function foldedText(text: string, label = 'output'): TemplateResult {
  const lines = text.split('\n');
  if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return html`<pre class="out">${text}</pre>`;
  const preview = lines.slice(0, PREVIEW_LINES).join('\n').slice(0, 1000);
  return html`<pre class="out preview">${preview}</pre>
    <details class="fold">
      <summary>Show the whole ${label} (${lines.length.toLocaleString('en')} lines, ${text.length.toLocaleString('en')} characters)</summary>
      <pre class="out">${text}</pre>
    </details>`;
}

/** Tool output: a diff part drawn as a diff, the rest as text. */
function outputView(text: string): TemplateResult {
  if (!isDiff(text)) return foldedText(text);
  const start = text.search(/^--- /m);
  const before = start > 0 ? text.slice(0, start).trimEnd() : '';
  return html`${before ? html`<pre class="out">${before}</pre>` : nothing}${diffView(start >= 0 ? text.slice(start) : text)}`;
}

function prettyArguments(text: string): { pretty: string; parsed?: Record<string, unknown> } {
  try {
    const parsed = JSON.parse(text) as unknown;
    return { pretty: JSON.stringify(parsed, null, 2), ...(parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? { parsed: parsed as Record<string, unknown> } : {}) };
  } catch {
    return { pretty: text };
  }
}

/** The whole call: its arguments (a command in full), and for a file edit the diff it makes. */
function argumentsView(item: ToolItem): TemplateResult {
  const { pretty, parsed } = prettyArguments(item.arguments);
  let diff: TemplateResult | typeof nothing = nothing;
  // A file edit (ours `edit_file {path}`, others' `edit {file_path}`): the diff it makes, unless its
  // result shows the diff it made.
  const resultHasDiff = item.result !== undefined && isDiff(item.result.text);
  if (parsed && !resultHasDiff && typeof parsed.old_string === 'string' && typeof parsed.new_string === 'string') {
    const named = parsed.path ?? parsed.file_path;
    const path = typeof named === 'string' ? named : 'file';
    diff = diffView(createTwoFilesPatch(`a/${path}`, `b/${path}`, `${parsed.old_string}\n`, `${parsed.new_string}\n`, undefined, undefined, { context: 3 }).replace(/^=+\n/m, ''));
  }
  if (parsed && typeof parsed.command === 'string') {
    return html`<pre class="command" aria-label="command">${parsed.command}</pre>${diff}${foldedText(pretty, 'arguments')}`;
  }
  return html`${diff}${foldedText(pretty, 'arguments')}`;
}

function rawView(key: string, events: readonly JournalEvent[], ctx: RenderContext): TemplateResult {
  const open = ctx.openRaw.has(key);
  return html`<details class="raw" ?open=${open} @toggle=${(e: Event) => ctx.toggleRaw(key, (e.currentTarget as HTMLDetailsElement).open)}>
    <summary>Raw events (${events.length}, seq ${events[0]?.seq ?? '?'}${events.length > 1 ? `–${events.at(-1)!.seq}` : ''})</summary>
    ${open ? html`<pre class="json">${events.map((event) => `${JSON.stringify(event, null, 2)}\n`)}</pre>` : nothing}
  </details>`;
}

export function blockView(block: Block, markdown: boolean): TemplateResult {
  if (block.type === 'reasoning') {
    return html`<details class="reasoning">
      <summary>Reasoning${block.redacted ? ' (redacted)' : ''} · ${block.text.length.toLocaleString('en')} characters</summary>
      <pre class="out">${block.text}</pre>
    </details>`;
  }
  if (block.type === 'tool-call') return html`<pre class="call">${block.name ?? 'tool'}(${block.text})</pre>`;
  return markdown ? html`<div class="md">${unsafeHTML(markdownHtml(block.text))}</div>` : html`<pre class="out">${block.text}</pre>`;
}

function messageView(item: MessageItem, ctx: RenderContext): TemplateResult {
  return html`<div class="item msg ${item.kind}" data-seq=${item.seq} data-kind=${item.kind} ?data-live=${item.live}>
    <div class="who">
      <span class="role">${item.kind === 'user' ? (item.from === 'user' ? 'You' : item.from) : 'Assistant'}</span>
      ${item.kind === 'assistant' ? html`<span class="dim">${item.from}</span>` : nothing}
      ${item.live ? html`<span class="badge live" aria-live="polite">streaming…</span>` : nothing}
      ${item.interrupted ? html`<span class="badge warn">interrupted</span>` : nothing}
      ${item.finish && item.finish !== 'stop' && item.finish !== 'tool-calls' ? html`<span class="badge warn">finish: ${item.finish}</span>` : nothing}
      ${item.usage ? html`<span class="dim usage">${formatUsage(item.usage)}</span>` : nothing}
    </div>
    ${item.blocks.map((block) => blockView(block, true))}
    ${rawView(item.key, item.events, ctx)}
  </div>`;
}

function decisionBadge(item: ToolItem): TemplateResult | typeof nothing {
  if (item.approval) {
    const by = item.approval.decidedBy;
    const who = typeof by === 'string' ? by : by && typeof by === 'object' ? String((by as { kind?: unknown; policy?: unknown }).policy ?? (by as { kind?: unknown }).kind ?? '') : '';
    return html`<span class="badge ${item.approval.decision === 'allow' ? 'ok' : 'bad'}" data-decision=${item.approval.decision}>${item.approval.decision === 'allow' ? 'allowed' : 'denied'}${who ? ` by ${who}` : ''}${item.approval.reason ? `: ${item.approval.reason}` : ''}</span>`;
  }
  if (item.requested && !item.result) return html`<span class="badge warn">waiting for approval</span>`;
  return nothing;
}

function toolView(item: ToolItem, ctx: RenderContext): TemplateResult {
  const pending = item.requested !== undefined && item.approval === undefined && item.result === undefined;
  return html`<div class="item tool ${pending ? 'pending' : ''}" data-seq=${item.seq} data-kind="tool" data-call-id=${item.callId}>
    <div class="who">
      <span class="role">Tool call</span> <code class="name">${item.name}</code>
      ${decisionBadge(item)}
      ${item.result ? html`<span class="badge ${item.result.isError ? 'bad' : 'ok'}">${item.result.isError ? 'error' : 'done'}${item.result.code ? ` ${item.result.code}` : ''}</span>` : item.started ? html`<span class="badge live">running…</span>` : nothing}
      ${item.result?.durationMs !== undefined ? html`<span class="dim">${item.result.durationMs} ms</span>` : nothing}
    </div>
    <div class="args">${argumentsView(item)}</div>
    ${
      pending && ctx.canAnswer
        ? html`<div class="approve" role="group" aria-label="Approve ${item.name}">
          <span>${item.name} wants to run${item.requested?.permission ? ` (${item.requested.permission})` : ''}.</span>
          <button class="allow" @click=${() => ctx.answer(item.callId, 'allow')}>Allow</button>
          <button class="deny" @click=${() => ctx.answer(item.callId, 'deny')}>Deny</button>
        </div>`
        : nothing
    }
    ${item.output && !item.result ? html`<div class="result live-output">${foldedText(item.output)}</div>` : nothing}
    ${item.result ? html`<div class="result ${item.result.isError ? 'error' : ''}">${outputView(item.result.text)}</div>` : nothing}
    ${rawView(item.key, item.events, ctx)}
  </div>`;
}

function markerView(item: MarkerItem, ctx: RenderContext): TemplateResult {
  return html`<div class="item marker ${item.tone}" data-seq=${item.seq} data-kind="marker" data-tone=${item.tone}>
    <div class="who"><span class="badge ${item.tone}">${item.tone}</span> <span>${item.label}</span></div>
    ${item.detail ? foldedText(item.detail, 'text') : nothing}
    ${rawView(item.key, item.events, ctx)}
  </div>`;
}

export function itemView(item: Item, ctx: RenderContext): TemplateResult {
  if (item.kind === 'tool') return toolView(item, ctx);
  if (item.kind === 'marker') return markerView(item, ctx);
  return messageView(item, ctx);
}

// biome-ignore lint/suspicious/noExplicitAny: a message of the folded state, from the server.
export function stateMessageView(message: any, index: number): TemplateResult {
  const role = String(message?.role ?? '?');
  const isToolResult = message?.source?.kind === 'tool';
  const content: unknown[] = Array.isArray(message?.content) ? message.content : [];
  return html`<div class="item msg ${role === 'assistant' ? 'assistant' : 'user'}" data-message-index=${index} data-message-id=${String(message?.id ?? '')} data-role=${role}>
    <div class="who"><span class="dim">#${index}</span> <span class="role">${isToolResult ? 'Tool result' : role}</span> <span class="dim">${sourceLabel(message?.source, role)}</span></div>
    ${content.map((raw) => {
      // biome-ignore lint/suspicious/noExplicitAny: a content block.
      const block = raw as any;
      if (block?.type === 'text' || block?.type === 'reasoning') return blockView({ type: block.type, text: String(block.text ?? '') }, true);
      if (block?.type === 'tool-call')
        return html`<div class="call-block"><code class="name">${String(block.name)}</code>${foldedText(prettyArguments(String(block.arguments ?? '')).pretty, 'arguments')}</div>`;
      if (block?.type === 'tool-result') return html`<div class="result ${block.isError ? 'error' : ''}">${outputView(textOfToolResult(block))}</div>`;
      return html`<pre class="out">[${String(block?.type ?? 'block')}]</pre>`;
    })}
  </div>`;
}
