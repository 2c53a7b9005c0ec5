/**
 * What a plugin author's test file looks like (cookbook/cassette.md): the `house-rules` middleware
 * tested against a recorded session through `harness-runtime/testing` (imported by path here, as
 * the cookbook lives in the package). Record once, commit the journal, and every change to the
 * plugin is checked against everything the model saw.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCassette } from '../testing/index.ts'; // 'harness-runtime/testing' in your project
import { record, stack } from './cassette.ts';

const baseDir = fileURLToPath(new URL('.', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-cassette-'));
let cassette: string;
// In your project the cassette is a committed journal; here it is recorded once for the test.
beforeAll(async () => {
  cassette = await record(stack(['Answer in English.']), dataDir);
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('house-rules against a recorded session', { timeout: 60_000 }, () => {
  it('re-runs the same with the plugin as recorded', async () => {
    const report = await expectCassette(cassette, { config: stack(['Answer in English.']), baseDir });
    expect(report.calls).toMatchObject({ recorded: 3, compared: 3, diverged: 0 });
  });

  it('a changed rule is caught, with the path and both values', async () => {
    await expect(expectCassette(cassette, { config: stack(['Answer in French.']), baseDir })).rejects.toThrow(/call 1 \(turn 1 step 1\): system: ".*Answer in English\." ≠ ".*Answer in French\."/);
  });
});
