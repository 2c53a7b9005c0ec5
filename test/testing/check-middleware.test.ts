/**
 * Issue 14.5: the conformance kit `checkMiddleware` (harness-runtime/testing) flags a deliberately
 * broken middleware for each invariant it checks, and passes the shipped middleware: none at all,
 * `rewriteText` redaction, the cookbook's plugins.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rewriteText, type GenerateOptions, type StreamChunk } from '../../runtime/index.ts';
import { checkMiddleware, type MiddlewareInvariant, type StreamMiddleware } from '../../testing/index.ts';
import { projectRoot } from '../support/fixture-server.ts';

/** A middleware that maps each chunk of the stream to zero or more chunks. */
const mapping =
  (fn: (chunk: StreamChunk) => StreamChunk[]): StreamMiddleware =>
  (request, next) =>
    (async function* () {
      for await (const chunk of next(request)) yield* fn(chunk);
    })();

async function invariantsOf(middleware: StreamMiddleware): Promise<Set<MiddlewareInvariant>> {
  const report = await checkMiddleware(middleware);
  expect(report.ok).toBe(false);
  return new Set(report.violations.map((v) => v.invariant));
}

describe('checkMiddleware passes', () => {
  it('the identity middleware, over every corpus stream', async () => {
    const report = await checkMiddleware((request, next) => next(request));
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.streams).toEqual(['text', 'signed-reasoning', 'parallel-tool-calls', 'max-tokens-cut', 'error-mid-stream', 'abort']);
  });

  it('a rewriteText redaction (the secret is split across deltas in the corpus)', async () => {
    const report = await checkMiddleware((request, next) => rewriteText(next(request), { pattern: /sk-kit-[0-9a-f]{32}/g, replace: '[redacted]', maxMatchLength: 39 }));
    expect(report.violations).toEqual([]);
  });

  it("the cookbook's stream-stats plugin and its redaction plugin, loaded as plugins", async () => {
    const redaction = await checkMiddleware({ module: path.join(projectRoot, 'cookbook/redaction.ts'), config: { patterns: ['sk-kit-[0-9a-f]{32}'] } });
    const { streamStats } = await import('../../cookbook/first-plugin.ts');
    expect((await checkMiddleware({ plugin: streamStats })).violations).toEqual([]);
    expect(redaction.violations).toEqual([]);
  });
});

describe('checkMiddleware flags', () => {
  it('finish-once-last: a second finish, and a chunk after the finish', async () => {
    expect(await invariantsOf(mapping((c) => (c.type === 'finish' ? [c, c] : [c])))).toContain('finish-once-last');
    expect(await invariantsOf(mapping((c) => (c.type === 'finish' ? [c, { type: 'usage', usage: {} }] : [c])))).toContain('finish-once-last');
  });

  it('finish-once-last: a swallowed finish', async () => {
    const report = await checkMiddleware(
      mapping((c) => (c.type === 'finish' ? [] : [c])),
      { streams: ['text'] },
    );
    expect(report.violations.map((v) => v.invariant)).toContain('finish-once-last');
  });

  it('blocks-well-formed: text repeated on block-end, a delta after block-end, a delta of the wrong type', async () => {
    let text = '';
    const repeat = mapping((c) => {
      if (c.type === 'text-delta') text += c.text;
      return c.type === 'block-end' && text !== '' ? [{ ...c, block: { type: 'text', text } }] : [c];
    });
    const report = await checkMiddleware(repeat, { streams: ['text'] });
    expect(report.violations).toEqual([expect.objectContaining({ invariant: 'blocks-well-formed', message: expect.stringContaining('repeats content') })]);
    expect(await invariantsOf(mapping((c) => (c.type === 'block-end' && c.index === 0 ? [c, { type: 'text-delta', index: 0, text: ' (late)' }] : [c])))).toContain('blocks-well-formed');
    expect(await invariantsOf(mapping((c) => (c.type === 'reasoning-delta' ? [{ type: 'text-delta', index: c.index, text: c.text }] : [c])))).toContain('blocks-well-formed');
  });

  it('replay-aligned: a whole block dropped without its envelope entry', async () => {
    const dropFirst = mapping((c) => (c.type !== 'usage' && c.type !== 'finish' && c.index === 0 ? [] : [c]));
    expect(await invariantsOf(dropFirst)).toContain('replay-aligned');
  });

  it('replay-not-moved: entries (and their digests) swapped between blocks', async () => {
    const swap = mapping((c) => {
      if (c.type !== 'finish' || c.replayState?.blocks === undefined || c.replayState.blocks.length < 2) return [c];
      const { blocks, digests } = c.replayState;
      return [{ ...c, replayState: { ...c.replayState, blocks: [blocks[1], blocks[0], ...blocks.slice(2)], ...(digests ? { digests: [digests[1]!, digests[0]!, ...digests.slice(2)] } : {}) } }];
    });
    const report = await checkMiddleware(swap, { streams: ['signed-reasoning', 'parallel-tool-calls'] });
    expect(report.violations.map((v) => v.invariant)).toContain('replay-not-moved');
  });

  it('usage-not-invented: a count the provider did not report, a changed count, a lost one', async () => {
    expect(await invariantsOf(mapping((c) => (c.type === 'usage' ? [{ type: 'usage', usage: { ...c.usage, cacheWriteTokens: 0 } }] : [c])))).toContain('usage-not-invented');
    expect(await invariantsOf(mapping((c) => (c.type === 'usage' && c.usage.outputTokens ? [{ type: 'usage', usage: { ...c.usage, outputTokens: c.usage.outputTokens * 2 } }] : [c])))).toContain(
      'usage-not-invented',
    );
    expect(await invariantsOf(mapping((c) => (c.type === 'usage' ? [] : [c])))).toContain('usage-not-invented');
  });

  it('abort-propagates: a middleware that passes the request on without its signal', async () => {
    const report = await checkMiddleware((request, next) => {
      const { signal: _dropped, ...rest } = request;
      return next(rest as GenerateOptions);
    });
    expect(report.violations.length).toBeGreaterThan(0);
    expect(report.violations.every((v) => v.stream === 'abort' && v.invariant === 'abort-propagates')).toBe(true);
    expect(report.violations.map((v) => v.message)).toContain("the caller's signal never reached the adapter (was the request passed on without its signal?)");
  });

  it('middleware-error: a middleware that throws mid-stream', async () => {
    const report = await checkMiddleware(
      mapping((c) => (c.type === 'usage' ? (null as never as StreamChunk[]).slice() : [c])),
      { streams: ['text'] },
    );
    expect(report.violations.map((v) => v.invariant)).toContain('middleware-error');
  });
});
