/**
 * `$HARNESS_HOME` names the data directory; a quoted `HARNESS_HOME="~/x"` reaches the process with
 * the `~` unexpanded, and it used to become `<cwd>/~/x` (a stray `~` folder in the project).
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveDataDir } from '../../runtime/harness.ts';
import { dataDirOf } from '../../runtime/session/paths.ts';

const saved = process.env.HARNESS_HOME;
afterEach(() => {
  if (saved === undefined) delete process.env.HARNESS_HOME;
  else process.env.HARNESS_HOME = saved;
});

describe('HARNESS_HOME', () => {
  it.each([
    ['~/journals', join(homedir(), 'journals')],
    ['~', homedir()],
    ['/srv/harness', '/srv/harness'],
    ['rel/dir', resolve('rel/dir')],
    ['~user/x', resolve('~user/x')],
  ])('%s → the data directory both resolvers agree on', (value, expected) => {
    process.env.HARNESS_HOME = value;
    expect(dataDirOf()).toBe(expected);
    expect(resolveDataDir(undefined)).toBe(expected);
  });

  it('unset or empty: ~/.harness; an explicit directory wins', () => {
    process.env.HARNESS_HOME = '';
    expect(dataDirOf()).toBe(join(homedir(), '.harness'));
    delete process.env.HARNESS_HOME;
    expect(resolveDataDir(undefined)).toBe(join(homedir(), '.harness'));
    process.env.HARNESS_HOME = '~/ignored';
    expect(resolveDataDir('/data', '/base')).toBe('/data');
    expect(resolveDataDir('data', '/base')).toBe('/base/data');
  });
});
