/**
 * The architecture checks (issue 13 item 5; scripts/check-architecture.ts) can fail: each rule is run
 * on a temporary copy of the tree with one violation planted for it, and must report that violation.
 * `.ci/run` runs the checks themselves on the tree (`npm run check:architecture`).
 */
import { describe, expect, it } from 'vitest';
import { resolve } from 'node:path';
import { selfCheck } from '../../scripts/check-architecture.ts';

const root = resolve(import.meta.dirname, '../..');

describe('architecture checks', () => {
  it('every rule fails on a violation planted in a copy of the tree', () => {
    const { ok, lines } = selfCheck(root);
    const rules = lines.map((line) => line.replace(/^(ok|MISS)\s+([\w-]+):.*$/, '$1 $2'));
    expect(rules).toEqual([
      'ok runtime-typechecks-alone',
      'ok no-cycles',
      'ok runtime-imports-only-runtime',
      'ok plugin-imports-public-entry',
      'ok plugin-stays-in-its-folder',
      'ok plugin-test-uses-testing',
      'ok testing-uses-public-entry',
      'ok testing-uses-public-entry',
      'ok cookbook-uses-public-entry',
      'ok runtime-no-path-strings',
      'ok runtime-no-default-model',
      'ok plugin-no-runtime-path-strings',
      'ok public-names-documented',
    ]);
    expect(ok).toBe(true);
  }, 600_000);
});
