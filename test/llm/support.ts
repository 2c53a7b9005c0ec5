/**
 * Helpers for the ctx.llm tests: scriptable fake adapters whose iterators record `next`/`return`
 * calls, a harness factory, chunk collection and temp module directories under `test/.tmp-llm-*`
 * (git-ignored; vitest externalizes them so `host.reload` re-imports them natively).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, LlmAdapter, type Diagnostic, type GenerateOptions, type Harness, type ModelInfo, type PluginDefinition, type StreamChunk } from '../../runtime/index.ts';

export const llmTestDir = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(llmTestDir, '..', '..');
export const runtimeIndex = join(repoRoot, 'runtime', 'index.ts');

/** One step of a scripted adapter stream. */
export type Step = { readonly chunk: StreamChunk } | { readonly raw: unknown } | { readonly throw: unknown } | { readonly wait: Promise<unknown> } | { readonly end: true };

export const chunk = (c: StreamChunk): Step => ({ chunk: c });

/** An async iterator that plays a script and records every call made on it. */
export class ScriptedIterator implements AsyncIterator<StreamChunk> {
  nextCalls = 0;
  returnCalls = 0;
  private at = 0;
  private closed = false;
  constructor(
    private readonly steps: readonly Step[],
    private readonly repeatLast = false,
  ) {}

  async next(): Promise<IteratorResult<StreamChunk>> {
    this.nextCalls++;
    if (this.closed) return { done: true, value: undefined };
    for (;;) {
      const step = this.at < this.steps.length ? this.steps[this.at++] : this.repeatLast ? this.steps[this.steps.length - 1] : undefined;
      if (step === undefined || 'end' in step) {
        this.closed = true;
        return { done: true, value: undefined };
      }
      if ('wait' in step) {
        await step.wait;
        continue;
      }
      if ('throw' in step) {
        this.closed = true;
        throw step.throw;
      }
      if ('raw' in step) return { done: false, value: step.raw as StreamChunk };
      return { done: false, value: step.chunk };
    }
  }

  async return(): Promise<IteratorResult<StreamChunk>> {
    this.returnCalls++;
    this.closed = true;
    return { done: true, value: undefined };
  }
}

/** A fake adapter: each `stream()` call plays `script(options)` (or throws what `throwOnStream` says). */
export class FakeAdapter extends LlmAdapter {
  readonly calls: GenerateOptions[] = [];
  readonly iterators: ScriptedIterator[] = [];
  throwOnStream: unknown = undefined;
  repeatLast = false;
  models: readonly ModelInfo[] | undefined;

  constructor(private readonly script: (options: GenerateOptions) => readonly Step[] = () => [chunk(finishStop)]) {
    super();
  }

  stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    this.calls.push(options);
    if (this.throwOnStream !== undefined) throw this.throwOnStream;
    const iterator = new ScriptedIterator(this.script(options), this.repeatLast);
    this.iterators.push(iterator);
    return { [Symbol.asyncIterator]: () => iterator };
  }

  get lastIterator(): ScriptedIterator {
    return this.iterators[this.iterators.length - 1]!;
  }
}

export const finishStop: StreamChunk = Object.freeze({ type: 'finish', finish: Object.freeze({ kind: 'stop' }) });
export const text = (index: number, value: string): StreamChunk => ({ type: 'text-delta', index, text: value });

/** A harness with the given plugin definitions loaded. */
export async function harnessWith(...plugins: PluginDefinition<any>[]): Promise<Harness> {
  return createHarness({ config: { plugins: plugins.map((plugin) => ({ plugin })) } });
}

export async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

export function diagnostics(harness: Harness): Diagnostic[] {
  const seen: Diagnostic[] = [];
  harness.kernel.bus.add('kernel/diagnostic', (d: Diagnostic) => void seen.push(d), { owner: 'test' });
  return seen;
}

export function baseOptions(extra: Partial<GenerateOptions> = {}): GenerateOptions {
  return { provider: 'fake', model: 'm', messages: [], ...extra };
}

export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function tick(ms = 0): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A fresh temp directory under test/ (git-ignored); `cleanup()` removes it. */
export function tempDir(prefix: string): { dir: string; write(name: string, text: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(repoRoot, 'test', `.tmp-${prefix}-`));
  return {
    dir,
    write(name, body) {
      const path = join(dir, name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      return path;
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Asserts that `fn` throws (or rejects with) an error with this code, and returns it. */
export async function codeOf(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (error) {
    return (error as { code?: string }).code ?? `no code: ${String(error)}`;
  }
  return 'did not throw';
}
