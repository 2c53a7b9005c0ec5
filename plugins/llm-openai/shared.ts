/**
 * What the Chat Completions and Responses adapters share: route lookup, the model catalog methods of
 * `LlmAdapter`, content helpers and the replay-degrade bookkeeping.
 */
import {
  LlmAdapter,
  LlmError,
  type AdapterDefaults,
  type ContentBlock,
  type ImageBlock,
  type FileBlock,
  type GenerateOptions,
  type ModelInfo,
  type ProviderInfo,
  type ReplayDegradeReport,
} from '../../runtime/index.ts';
import type { OpenAIRoute } from './config.ts';
import { ClientCache } from './transport.ts';

/** Base of both OpenAI adapters: a set of routes of one API kind. */
export abstract class OpenAIAdapterBase extends LlmAdapter {
  protected readonly routes: ReadonlyMap<string, OpenAIRoute>;
  protected readonly clients = new ClientCache();
  /** How many times the seam dropped a message's replay state before a request to this adapter. */
  degradeCount = 0;
  /** The last such report. */
  lastDegrade: ReplayDegradeReport | undefined;

  constructor(routes: readonly OpenAIRoute[]) {
    super();
    this.routes = new Map(routes.map((route) => [route.provider, route]));
  }

  protected abstract readonly kind: string;

  /** @throws LlmError `NO_ADAPTER` for a provider this adapter does not serve. */
  protected route(provider: string): OpenAIRoute {
    const route = this.routes.get(provider);
    if (route === undefined) throw new LlmError('NO_ADAPTER', `The ${this.kind} adapter does not serve provider "${provider}".`, { details: { provider } });
    return route;
  }

  override providerInfo(provider: string): ProviderInfo {
    return { provider, kind: this.kind, label: this.routes.get(provider)?.label ?? provider };
  }

  override listModels(provider: string): readonly ModelInfo[] {
    return this.routes.get(provider)?.models ?? [];
  }

  /** Exact lookup; with `allowUnknownModels`, an unlisted id resolves to `{ id }`. */
  override resolveModel(provider: string, model: string): ModelInfo | undefined {
    const route = this.routes.get(provider);
    if (route === undefined) return undefined;
    return route.modelsById.get(model) ?? (route.allowUnknownModels ? { id: model } : undefined);
  }

  override defaults(provider: string): AdapterDefaults | undefined {
    return this.routes.get(provider)?.defaults;
  }

  override onReplayDegrade(report: ReplayDegradeReport): void {
    this.degradeCount++;
    this.lastDegrade = report;
  }
}

/** Whether the model takes images (a model without declared modalities is given them). */
export function acceptsModality(route: OpenAIRoute, options: GenerateOptions, modality: 'image' | 'file'): boolean {
  const modalities = route.modelsById.get(options.model)?.inputModalities;
  return modalities === undefined || modalities.includes(modality);
}

/** A `data:` URL or the block's URL. */
export function mediaUrl(block: ImageBlock | FileBlock): string {
  if (block.url !== undefined) return block.url;
  return `data:${block.mediaType};base64,${block.data ?? ''}`;
}

export function omittedMedia(block: ImageBlock | FileBlock): string {
  return `[${block.type === 'image' ? 'image' : 'file'} omitted: the model does not accept ${block.type === 'image' ? 'images' : 'files'} (${block.mediaType})]`;
}

/** Text of the text blocks of a list, joined with newlines. */
export function joinedText(blocks: readonly ContentBlock[]): string {
  let text = '';
  for (const block of blocks) if (block.type === 'text') text = text === '' ? block.text : `${text}\n${block.text}`;
  return text;
}

/** The failure for a finish that was cut by a content filter (`CONTENT_FILTER`). */
export function contentFilterError(provider: string, providerCode: string): LlmError {
  return new LlmError('CONTENT_FILTER', `Provider "${provider}" stopped the response with its content filter (${providerCode}).`, {
    details: { provider, providerCode },
  });
}

export function emptyResponseError(provider: string): LlmError {
  return new LlmError('EMPTY_RESPONSE', `Provider "${provider}" finished with "stop" but sent no text and no tool call.`, { details: { provider } });
}

export function missingFinishError(provider: string): LlmError {
  return new LlmError('TRANSPORT', `The stream from provider "${provider}" ended before its finish event (the connection closed early).`, { details: { provider } });
}

let syntheticIds = 0;
/** An id for a tool call the provider sent without one. */
export function syntheticCallId(): string {
  return `call_h${Date.now().toString(36)}${(++syntheticIds).toString(36)}`;
}
