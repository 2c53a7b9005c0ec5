/**
 * What the Chat Completions and Responses adapters share: their base class and content helpers.
 */
import type OpenAI from 'openai';
import { LlmError, RoutedSdkAdapter, type ContentBlock, type FileBlock, type GenerateOptions, type ImageBlock } from '../../runtime/index.ts';
import type { OpenAIRoute } from './config.ts';
import { createOpenAIClient } from './transport.ts';

/** Base of both OpenAI adapters: a set of routes of one API kind (routes, catalog, key preflight: the kit's `RoutedSdkAdapter`). */
export abstract class OpenAIAdapterBase extends RoutedSdkAdapter<OpenAIRoute, OpenAI> {
  constructor(routes: readonly OpenAIRoute[]) {
    super(routes, createOpenAIClient);
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
