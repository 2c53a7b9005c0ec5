/**
 * A turn's incoming W3C trace context (https://www.w3.org/TR/trace-context/): the `traceparent` and
 * `tracestate` a caller hands a turn (`session.run(input, { trace })`; `harness serve` takes them
 * from the HTTP headers of the request that submits the turn). The runtime does not trace; it
 * journals the context on the turn's `turn/start` record, so any plugin that does (plugins/otel),
 * live or from the journal later (`harness export --otel`), parents the turn's spans the same way.
 *
 * What is journaled is checked strictly first, since it comes from outside the process: nothing
 * longer or looser than the W3C format allows is ever written. {@link checkTraceContext} gives the
 * checked value or why it was refused — the loop then ignores it with a warning, never fails the turn.
 */

/** A turn's W3C trace context, as journaled on `turn/start` (`data.trace`). */
export interface TraceContext {
  /**
   * `<version>-<trace id>-<parent span id>-<flags>`: 2, 32, 16 and 2 lowercase hex digits, e.g.
   * `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01` (always these 55 characters).
   */
  readonly traceparent: string;
  /** Vendor entries `key=value,…` (at most 32), only with a valid `traceparent`. */
  readonly tracestate?: string;
}

/** The checked trace context, or why (part of) it was ignored. */
export interface TraceContextCheck {
  /** What may be journaled: absent when there was none or the traceparent was refused. */
  readonly trace?: TraceContext;
  /** Why something given was ignored (a refused traceparent, or a tracestate dropped from a valid one). */
  readonly problem?: string;
}

const HEX_FIELDS = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** The W3C maximum number of tracestate list members. */
const MAX_TRACESTATE_MEMBERS = 32;
const SIMPLE_KEY = /^[a-z][a-z0-9_\-*/]{0,255}$/;
const TENANT_KEY = /^[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13}$/;
// 1 to 256 printable ASCII characters except `,` and `=`, the last not a space.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
/** HTTP optional whitespace around a value or a list member. */
const trimOws = (text: string): string => text.replace(/^[ \t]+|[ \t]+$/g, '');

/**
 * Checks a caller's trace context (`{ traceparent, tracestate? }`, any JS value) against the W3C
 * format. A `traceparent` of version `00` must be exactly its 55 characters; a later version is
 * read as the spec asks (its first four fields, the rest dropped); version `ff`, an all-zero trace
 * or span id, uppercase or missing digits are refused. A `tracestate` with a malformed member, a
 * duplicate key or more than 32 members is dropped whole (the traceparent stays); empty members
 * are skipped. Never throws.
 */
export function checkTraceContext(value: unknown): TraceContextCheck {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) return { problem: 'the trace context is not an object { traceparent, tracestate? }' };
  const { traceparent, tracestate } = value as { traceparent?: unknown; tracestate?: unknown };
  if (traceparent === undefined) return tracestate === undefined ? {} : { problem: 'a tracestate came without a traceparent' };
  const parent = checkTraceparent(traceparent);
  if (typeof parent !== 'string') return { problem: `the traceparent ${parent.problem}` };
  if (tracestate === undefined) return { trace: { traceparent: parent } };
  const state = checkTracestate(tracestate);
  if (typeof state !== 'string') return { trace: { traceparent: parent }, problem: `the tracestate ${state.problem}` };
  return { trace: state === '' ? { traceparent: parent } : { traceparent: parent, tracestate: state } };
}

function checkTraceparent(value: unknown): string | { problem: string } {
  if (typeof value !== 'string') return { problem: `is a ${Array.isArray(value) ? 'list' : typeof value}, not a string` };
  const text = trimOws(value);
  // Version 00 is exactly 55 characters; a later version may add fields after a '-'.
  if (text.length < 55 || (text.length > 55 && (text.startsWith('00') || text[55] !== '-'))) return { problem: `has ${text.length} characters, not the 55 of 00-<32 hex>-<16 hex>-<2 hex>` };
  const head = text.slice(0, 55);
  const match = HEX_FIELDS.exec(head);
  if (match === null) return { problem: 'is not 00-<32 lowercase hex trace id>-<16 lowercase hex span id>-<2 hex flags>' };
  if (match[1] === 'ff') return { problem: 'has version ff, which the W3C format forbids' };
  if (/^0+$/.test(match[2]!)) return { problem: 'has an all-zero trace id' };
  if (/^0+$/.test(match[3]!)) return { problem: 'has an all-zero parent span id' };
  return head;
}

/** The normalised list (`k=v,k=v`, no whitespace, no empty members), or why it is refused. */
function checkTracestate(value: unknown): string | { problem: string } {
  if (typeof value !== 'string') return { problem: `is a ${Array.isArray(value) ? 'list' : typeof value}, not a string` };
  const members: string[] = [];
  const keys = new Set<string>();
  for (const raw of value.split(',')) {
    const member = trimOws(raw);
    if (member === '') continue;
    if (members.length === MAX_TRACESTATE_MEMBERS) return { problem: `has more than ${MAX_TRACESTATE_MEMBERS} members` };
    const equals = member.indexOf('=');
    const key = equals < 0 ? member : member.slice(0, equals);
    if (equals < 0 || !(SIMPLE_KEY.test(key) || TENANT_KEY.test(key)) || !VALUE.test(member.slice(equals + 1))) {
      return { problem: `member ${members.length + 1} is not key=value in the W3C format (a lowercase key of at most 256 characters, a printable value of at most 256)` };
    }
    if (keys.has(key)) return { problem: `has the key of member ${members.length + 1} twice` };
    keys.add(key);
    members.push(member);
  }
  return members.join(',');
}
