/**
 * Shared helpers for the kernel tests: test hook declarations, a diagnostic collector and temp
 * directories under `test/.tmp-*` (git-ignored; vitest externalizes them so they load natively,
 * through the reload loader hook).
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Diagnostic, EmitHook, HookBus, SinkHook, WaterfallHook } from '../../runtime/kernel/bus.ts';

declare module '../../runtime/kernel/bus.ts' {
  interface HookMap {
    'test/number': WaterfallHook<number, number>;
    'test/async': WaterfallHook<number, Promise<number>>;
    'test/stream': WaterfallHook<{ count: number }, AsyncIterable<string>>;
    'test/gen': WaterfallHook<{ id: number }, Promise<number[]>>;
    'test/event': EmitHook<{ n: number }>;
    'test/sink': SinkHook<{ n: number }>;
  }
}

export const testDir = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(testDir, '..', '..');
/** `file:` URL of runtime/index.ts, for generated plugin modules to import. */
export const runtimeIndex = join(repoRoot, 'runtime', 'index.ts');

/** A fresh temp directory under test/ (git-ignored); `cleanup()` removes it. */
export function tempDir(prefix: string): { dir: string; write(name: string, text: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(repoRoot, 'test', `.tmp-${prefix}-`));
  return {
    dir,
    write(name, text) {
      const path = join(dir, name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
      return path;
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Collects every `kernel/diagnostic` a bus reports. */
export function collectDiagnostics(bus: HookBus): Diagnostic[] {
  const seen: Diagnostic[] = [];
  bus.add('kernel/diagnostic', (d: Diagnostic) => void seen.push(d), { owner: 'test' });
  return seen;
}

export function tick(ms = 0): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves after every queued microtask (and the ones they queue) has run. */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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

/** Declares the test hooks on a bus. */
export function declareTestHooks(bus: HookBus): void {
  bus.declare('test/number', 'waterfall');
  bus.declare('test/async', 'waterfall');
  bus.declare('test/stream', 'waterfall');
  bus.declare('test/gen', 'waterfall');
  bus.declare('test/event', 'emit');
  bus.declare('test/sink', 'sink');
}
