/**
 * `harness replay <session> --cassette` as a user runs it: exit 0 only when everything matches;
 * `--update` prints the fork's id and leaves the recording's bytes alone; `--inject` faults are listed
 * and retried by llm-retry; the cassette flags need --cassette.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journalOf, projectRoot, tempDir, writeProject } from '../cli/support.ts';

const project = tempDir('cassette-cli');
afterAll(() => project.cleanup());
const demo = join(projectRoot, 'cookbook/demo-workspace');
const plugins = [{ name: 'llm-scripted', config: { paceMs: 0 } }, { name: 'llm-retry', config: { initialDelayMs: 10 } }, { name: 'tools-workspace' }, { name: 'approvals' }];

describe('replay --cassette', { timeout: 180_000 }, () => {
  it('same, --update (a fork that re-runs the same; the recording untouched), --inject', async () => {
    const home = join(project.dir, 'home');
    const config = writeProject(join(project.dir, 'v1'), { extra: { defaults: { provider: 'scripted', model: 'scripted-default', system: 'Be careful.' } }, plugins });
    const changed = writeProject(join(project.dir, 'v2'), { extra: { defaults: { provider: 'scripted', model: 'scripted-default', system: 'Be quick.' } }, plugins });
    const recorded = await harness(['run', 'What is in this workspace?', '--config', config, '--cwd', demo], { home });
    expect(recorded.code).toBe(0);
    const path = journalOf(recorded.stdout);
    const bytes = readFileSync(path);

    const same = await harness(['replay', path, '--cassette', '--config', config, '--inject', '2:disconnect@1'], { home });
    expect(same.stdout).toContain('injected disconnect after chunk 1 on call 2 (turn 1 step 2)');
    expect(same.stdout).toContain('calls: 3 recorded, 3 served, 3 compared on the whole request, 0 diverged, 1 injected; tool results: 2 served, 0 re-run (2 recorded)');
    expect(same.stdout).toMatch(/^same /m);
    expect(same.code).toBe(0);

    const update = await harness(['replay', path, '--cassette', '--config', changed, '--update'], { home });
    expect(update.code).toBe(1);
    expect(update.stdout).toContain('✗ call 1 (turn 1 step 1): system: "Be careful." ≠ "Be quick."');
    const fork = /^updated: the re-run was written as (\S+) /m.exec(update.stdout)?.[1];
    expect(fork).toMatch(/\.update-1$/);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    const again = await harness(['replay', fork!, '--cassette', '--config', changed], { home });
    expect(again.stdout).toMatch(/^same /m);
    expect(again.code).toBe(0);

    const misuse = await harness(['replay', path, '--inject', '1:stall'], { home });
    expect(misuse.code).not.toBe(0);
    expect(misuse.stderr).toContain('--inject only goes with --cassette');
    const bad = await harness(['replay', path, '--cassette', '--config', config, '--inject', 'two:boom'], { home });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('is not a fault. Use <call>:disconnect[@N]');
  });
});
