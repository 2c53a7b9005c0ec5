/**
 * Faults a cassette re-run injects on recorded calls (`harness replay --cassette --inject …`), so a
 * retry or approval policy can be tested offline against a real recording. The first request that
 * gets the call fails as described; the call stays unconsumed, so a retry is served the recording.
 *
 * Spec (one per `--inject`): `<call>:<fault>` with `call` the 1-based recorded call number and
 * - `disconnect` / `disconnect@N`: the connection drops after N chunks (default 0) — `TRANSPORT`;
 * - `status=429` / `status=503,retry-after=2`: an HTTP error status, with a `retry-after` in
 *   seconds — `RATE_LIMIT` (429), `AUTH` (401, 403), `TIMEOUT` (408), `SERVER` (5xx), `INVALID_REQUEST` (other 4xx);
 * - `stall` / `stall@N`: no chunk after N chunks until the idle timeout fires — `TIMEOUT` (simulated:
 *   the timeout fires at once instead of after the route's `idleTimeoutMs`).
 */
import { HarnessError, LlmError } from '../../runtime/index.ts';

export type Fault =
  | { readonly call: number; readonly kind: 'disconnect'; readonly afterChunks: number }
  | { readonly call: number; readonly kind: 'status'; readonly status: number; readonly retryAfterMs?: number }
  | { readonly call: number; readonly kind: 'stall'; readonly afterChunks: number };

const SPEC = /^(\d+):(?:(disconnect|stall)(?:@(\d+))?|status=(\d{3})(?:,retry-after=(\d+(?:\.\d+)?))?)$/;

/**
 * Parses one `--inject` spec.
 * @throws HarnessError `INVALID_ARGUMENTS` naming the accepted forms.
 */
export function parseFault(spec: string): Fault {
  const match = SPEC.exec(spec.trim());
  if (match === null) {
    throw new HarnessError(
      'INVALID_ARGUMENTS',
      `--inject ${JSON.stringify(spec)} is not a fault. Use <call>:disconnect[@N], <call>:status=<code>[,retry-after=<seconds>] or <call>:stall[@N], with <call> the 1-based recorded call (e.g. 2:disconnect@3, 1:status=429,retry-after=1).`,
    );
  }
  const call = Number(match[1]);
  if (call < 1) throw new HarnessError('INVALID_ARGUMENTS', `--inject ${JSON.stringify(spec)}: calls are numbered from 1.`);
  if (match[2] !== undefined) return { call, kind: match[2] as 'disconnect' | 'stall', afterChunks: match[3] === undefined ? 0 : Number(match[3]) };
  const status = Number(match[4]);
  if (status < 400 || status > 599) throw new HarnessError('INVALID_ARGUMENTS', `--inject ${JSON.stringify(spec)}: the status must be an HTTP error status (400-599).`);
  return { call, kind: 'status', status, ...(match[5] === undefined ? {} : { retryAfterMs: Math.round(Number(match[5]) * 1000) }) };
}

/** The fault as one line for the report. */
export function describeFault(fault: Fault): string {
  switch (fault.kind) {
    case 'disconnect':
      return `disconnect after chunk ${fault.afterChunks}`;
    case 'stall':
      return `stall after chunk ${fault.afterChunks} past the idle timeout`;
    case 'status':
      return `HTTP ${fault.status}${fault.retryAfterMs === undefined ? '' : ` with retry-after ${fault.retryAfterMs / 1000} s`}`;
  }
}

/** How many recorded chunks go out before the fault. */
export function chunksBefore(fault: Fault): number {
  return fault.kind === 'status' ? 0 : fault.afterChunks;
}

/** The error the fault ends the stream with (the seam turns it into `finish{error}`). */
export function faultError(fault: Fault): LlmError {
  const injected = `(injected by the cassette on recorded call ${fault.call})`;
  switch (fault.kind) {
    case 'disconnect':
      return new LlmError('TRANSPORT', `The connection closed after ${fault.afterChunks} chunk(s) ${injected}.`, { details: { injected: true } });
    case 'stall':
      return new LlmError('TIMEOUT', `No chunk arrived within the idle timeout after ${fault.afterChunks} chunk(s) ${injected}.`, { details: { injected: true } });
    case 'status': {
      const s = fault.status;
      const code = s === 429 ? 'RATE_LIMIT' : s === 401 || s === 403 ? 'AUTH' : s === 408 ? 'TIMEOUT' : s >= 500 ? 'SERVER' : 'INVALID_REQUEST';
      return new LlmError(code, `HTTP ${s} ${injected}.`, { details: { status: s, injected: true, ...(fault.retryAfterMs === undefined ? {} : { providerRetryAfterMs: fault.retryAfterMs }) } });
    }
  }
}
