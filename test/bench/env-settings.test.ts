import { afterEach, describe, expect, it } from 'vitest';
import { envInt, envList } from '../../bench/support.ts';

describe('bench envInt', () => {
  const name = 'BENCH_TEST_ENV_INT';
  afterEach(() => {
    delete process.env[name];
  });

  it('reads an integer, and the default when unset or empty', () => {
    expect(envInt(name, 7)).toBe(7);
    process.env[name] = '  ';
    expect(envInt(name, 7)).toBe(7);
    process.env[name] = '50000';
    expect(envInt(name, 7)).toBe(50_000);
    process.env[name] = '0';
    expect(envInt(name, 7, 0)).toBe(0); // a pace or a warm-up minimum may be 0
  });

  it.each(['abc', '0', '-3', '2.5', '1e400'])('refuses %j where the least is 1, naming the variable and the default', (raw) => {
    process.env[name] = raw;
    expect(() => envInt(name, 7)).toThrow(`${name} must be an integer ≥ 1; got ${JSON.stringify(raw)}. Unset it for the default (7).`);
  });

  it('refuses a negative number where the least is 0', () => {
    process.env[name] = '-1';
    expect(() => envInt(name, 0, 0)).toThrow(`${name} must be an integer ≥ 0; got "-1". Unset it for the default (0).`);
  });
});

describe('bench envList', () => {
  const name = 'BENCH_TEST_ENV_LIST';
  const known = ['paced', 'burst'] as const;
  afterEach(() => {
    delete process.env[name];
  });

  it('reads known names (spaces trimmed), and every known name when unset or empty', () => {
    expect(envList(name, known)).toEqual(known);
    process.env[name] = '';
    expect(envList(name, known)).toEqual(known);
    process.env[name] = 'burst, paced';
    expect(envList(name, known)).toEqual(['burst', 'paced']);
    process.env[name] = 'burst';
    expect(envList(name, known)).toEqual(['burst']);
  });

  it('refuses a misspelt name before anything runs, naming it and the known ones', () => {
    process.env[name] = 'paced,bursts,';
    expect(() => envList(name, known)).toThrow(`${name} names "bursts", "", which are not known; known: paced, burst. Unset it for all of them.`);
  });
});
