/**
 * The strict W3C trace context check behind a turn's `trace` option (runtime/session/trace-context.ts):
 * what may be journaled on `turn/start`, and why the rest is refused.
 */
import { describe, expect, it } from 'vitest';
import { checkTraceContext } from '../../runtime/index.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const PARENT = `00-${TRACE}-${SPAN}-01`;

describe('checkTraceContext', () => {
  it('keeps a valid traceparent (optional whitespace trimmed) and nothing when none is given', () => {
    expect(checkTraceContext({ traceparent: PARENT })).toEqual({ trace: { traceparent: PARENT } });
    expect(checkTraceContext({ traceparent: ` \t${PARENT} ` })).toEqual({ trace: { traceparent: PARENT } });
    expect(checkTraceContext({ traceparent: `00-${TRACE}-${SPAN}-00` })).toEqual({ trace: { traceparent: `00-${TRACE}-${SPAN}-00` } });
    expect(checkTraceContext(undefined)).toEqual({});
    expect(checkTraceContext({})).toEqual({});
  });

  it('reads a later version as the spec asks: its first four fields, the rest dropped', () => {
    expect(checkTraceContext({ traceparent: `cc-${TRACE}-${SPAN}-01-future-field` })).toEqual({ trace: { traceparent: `cc-${TRACE}-${SPAN}-01` } });
    expect(checkTraceContext({ traceparent: `cc-${TRACE}-${SPAN}-01x` }).trace).toBeUndefined();
  });

  it.each([
    ['uppercase hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`, 'is not 00-'],
    ['version ff', `ff-${TRACE}-${SPAN}-01`, 'version ff'],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`, 'all-zero trace id'],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`, 'all-zero parent span id'],
    ['a short value', PARENT.slice(0, 54), '54 characters'],
    ['version 00 with more after it', `${PARENT}-extra`, '61 characters'],
    ['a missing flag digit', `00-${TRACE}-${SPAN}-1`, '54 characters'],
    ['two headers joined', `${PARENT}, ${PARENT}`, '112 characters'],
    ['a list', [PARENT], 'is a list, not a string'],
    ['a number', 42, 'is a number, not a string'],
  ])('refuses a traceparent with %s', (_label, traceparent, problem) => {
    const check = checkTraceContext({ traceparent, tracestate: 'a=1' });
    expect(check.trace).toBeUndefined();
    expect(check.problem).toContain('the traceparent');
    expect(check.problem).toContain(problem);
  });

  it('refuses what is not a trace context, and a tracestate without a traceparent', () => {
    expect(checkTraceContext('00-x')).toEqual({ problem: expect.stringContaining('not an object') });
    expect(checkTraceContext({ tracestate: 'a=1' })).toEqual({ problem: 'a tracestate came without a traceparent' });
  });

  it('keeps a valid tracestate, normalised (whitespace and empty members dropped); multi-tenant keys are valid', () => {
    expect(checkTraceContext({ traceparent: PARENT, tracestate: ' rojo=00f067aa0ba902b7 ,, congo=t61rcWkgMzE,tenant@vendor=x y' })).toEqual({
      trace: { traceparent: PARENT, tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,tenant@vendor=x y' },
    });
    expect(checkTraceContext({ traceparent: PARENT, tracestate: ' , ' })).toEqual({ trace: { traceparent: PARENT } });
    const members = Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(',');
    expect(checkTraceContext({ traceparent: PARENT, tracestate: members }).trace?.tracestate).toBe(members);
    expect(checkTraceContext({ traceparent: PARENT, tracestate: `k=${'v'.repeat(256)}` }).trace?.tracestate).toBe(`k=${'v'.repeat(256)}`);
  });

  it.each([
    ['33 members', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','), 'more than 32 members'],
    ['an uppercase key', 'Rojo=1', 'member 1'],
    ['a value with "="', 'a=1,b=x=y', 'member 2'],
    ['a value of 257 characters', `k=${'v'.repeat(257)}`, 'member 1'],
    ['a key of 257 characters', `${'k'.repeat(257)}=v`, 'member 1'],
    ['a member without "="', 'a=1,b', 'member 2'],
    ['an empty value', 'a=', 'member 1'],
    ['a control character', 'a=x\u0001y', 'member 1'],
    ['a duplicate key', 'a=1,b=2,a=3', 'twice'],
  ])('drops a tracestate with %s, keeping the traceparent', (_label, tracestate, problem) => {
    const check = checkTraceContext({ traceparent: PARENT, tracestate });
    expect(check.trace).toEqual({ traceparent: PARENT });
    expect(check.problem).toContain('the tracestate');
    expect(check.problem).toContain(problem);
  });
});
