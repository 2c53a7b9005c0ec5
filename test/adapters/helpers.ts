/**
 * Shared helpers of the adapter tests: a harness whose adapter routes point at the loopback fixture
 * server (real SDKs, no mocks), a stream collector and the assembled result.
 */
import path from 'node:path';
import {
  BlockAssembler,
  createHarness,
  createUserMessage,
  type AssembledMessage,
  type GenerateOptions,
  type Harness,
  type LlmAdapter,
  type LlmCallConfig,
  type Message,
  type StreamChunk,
} from '../../runtime/index.ts';
import { projectRoot, startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';

export const OPENAI_PLUGIN = path.join(projectRoot, 'plugins/llm-openai/index.ts');
export const ANTHROPIC_PLUGIN = path.join(projectRoot, 'plugins/llm-anthropic/index.ts');

/** The env variable the test routes read their key from (never a real provider variable). */
export const TEST_KEY_ENV = 'HARNESS_TEST_PROVIDER_KEY';
process.env[TEST_KEY_ENV] = 'test-key';

export interface Rig {
  server: FixtureServer;
  harness: Harness;
  close(): Promise<void>;
}

/** Starts a fixture server and a harness loading `plugin` with `config(server)`. */
export async function startRig(plugin: string, config: (server: FixtureServer) => unknown): Promise<Rig> {
  const server = await startFixtureServer();
  let harness: Harness;
  try {
    harness = await createHarness({ config: { plugins: [{ module: plugin, config: config(server) }] } });
  } catch (error) {
    await server.close();
    throw error;
  }
  return {
    server,
    harness,
    async close() {
      await harness.dispose();
      await server.close();
    },
  };
}

export interface Run {
  chunks: StreamChunk[];
  result: AssembledMessage;
}

/** Prepares and streams one call, collecting every chunk and assembling them. */
export async function run(harness: Harness, config: LlmCallConfig, rest: Partial<GenerateOptions> = {}): Promise<Run> {
  const prepared = await harness.llm.prepareCall(config);
  const options: GenerateOptions = { ...prepared.config, messages: rest.messages ?? [createUserMessage('hi')], ...rest };
  const chunks: StreamChunk[] = [];
  const assembler = new BlockAssembler();
  for await (const chunk of prepared.stream(options)) {
    chunks.push(chunk);
    assembler.push(chunk);
  }
  return { chunks, result: assembler.result() };
}

/** The adapter serving `provider`. */
export function adapterOf<T extends LlmAdapter>(harness: Harness, provider: string): T {
  const registration = harness.llm.registry.lookup(provider);
  if (registration === undefined) throw new Error(`no route ${provider}`);
  return registration.adapter as T;
}

export function textOf(result: AssembledMessage): string {
  return result.content
    .filter((b) => b.type === 'text' && !b.refusal)
    .map((b) => (b as { text: string }).text)
    .join('');
}

export function reasoningOf(result: AssembledMessage): string {
  return result.content
    .filter((b) => b.type === 'reasoning')
    .map((b) => (b as { text: string }).text)
    .join('');
}

export function toolCallsOf(result: AssembledMessage): { id: string; name: string; arguments: string }[] {
  return result.content
    .filter((b) => b.type === 'tool-call')
    .map((b) => {
      const call = b as { id: string; name: string; arguments: string };
      return { id: call.id, name: call.name, arguments: call.arguments };
    });
}

/** The finish chunk of a run (exactly one, last). */
export function finishOf(chunks: readonly StreamChunk[]): Extract<StreamChunk, { type: 'finish' }> {
  const finishes = chunks.filter((c) => c.type === 'finish');
  if (finishes.length !== 1 || chunks.at(-1)!.type !== 'finish') throw new Error(`expected exactly one terminal finish, got ${finishes.length}`);
  return finishes[0] as Extract<StreamChunk, { type: 'finish' }>;
}

/** Checks the block protocol: indexes 0.. in order of block-start, deltas inside started blocks, one end per block. */
export function checkBlockProtocol(chunks: readonly StreamChunk[]): void {
  let next = 0;
  const started = new Set<number>();
  const ended = new Set<number>();
  for (const chunk of chunks) {
    if (chunk.type === 'block-start') {
      if (chunk.index !== next) throw new Error(`block-start index ${chunk.index}, expected ${next}`);
      started.add(next++);
    } else if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta' || chunk.type === 'tool-call-delta') {
      if (!started.has(chunk.index) || ended.has(chunk.index)) throw new Error(`${chunk.type} for block ${chunk.index} outside its block`);
    } else if (chunk.type === 'block-end') {
      if (!started.has(chunk.index) || ended.has(chunk.index)) throw new Error(`block-end for block ${chunk.index} twice or before its start`);
      ended.add(chunk.index);
    }
  }
}

export const user = (text: string): Message => createUserMessage(text);
