/**
 * Errors with stable codes (seed 003 "错误与观察", seed 002 14.4).
 *
 * Every error the runtime raises is a `HarnessError`: a stable UPPER_SNAKE `code` to branch on, a
 * human `message` that names the thing and the fix, and a frozen JSON-safe `failure` that can be
 * journaled as is. Never branch on `message`.
 *
 * Whose words a message uses — one rule for the runtime, the plugins and the CLI: a message speaks to
 * whoever can fix the problem, in the words they use. What a config or a command line causes is said
 * with config keys (`maxSteps`, the config's plugins) or CLI flags; the plugin API (`definePlugin`,
 * `defineTool`, `ctx.declareHook`) is named only in errors that only plugin code can cause. No
 * message names a function or an option of the embedding API (`openJournal`, `forkSession`,
 * `{ salvage: true }`, `{ closeOpenTurn: true }`): the remedy is said neutrally ("a salvage read skips
 * the line", "fork with the open turn closed"), an API caller has the code and the `failure`
 * details, and the CLI adds a `hint:` per code with its flag (`--salvage`, `--close-turn`).
 * test/cli/messages.test.ts holds every message to this.
 */
import { deepFreeze } from './freeze.ts';

/** Seed 003 `Issue`: one problem found in an input, with its location. */
export interface Issue {
  readonly code: string;
  readonly message: string;
  readonly path?: readonly (string | number)[];
  readonly checkId?: string;
}

/**
 * The serialisable description of a failure: what is journaled and what crosses process boundaries.
 * `status` is the HTTP status when one exists; `providerRetryAfterMs` is the provider's own
 * `retry-after` in milliseconds when it sent one. Extra keys are allowed (JSON values only).
 */
export interface Failure {
  readonly code: string;
  readonly message: string;
  readonly status?: number;
  readonly providerRetryAfterMs?: number;
  readonly providerCode?: string;
  readonly issues?: readonly Issue[];
  readonly [key: string]: unknown;
}

/** Options of `new HarnessError(code, message, options)`. */
export interface HarnessErrorOptions {
  cause?: unknown;
  /** Extra JSON-safe fields copied into `failure`. */
  details?: Record<string, unknown>;
  issues?: readonly Issue[];
  /** Overrides the retryability a consumer would infer from the code. */
  isRetryable?: boolean;
}

const HARNESS_ERROR = Symbol.for('harness.error');

/** An error with a stable `code` and a frozen serialisable `failure`. */
export class HarnessError extends Error {
  readonly code: string;
  readonly failure: Failure;
  readonly issues: readonly Issue[];
  readonly isRetryable?: boolean;
  declare readonly cause: unknown;

  constructor(code: string, message: string, options: HarnessErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HarnessError';
    this.code = code;
    this.issues = deepFreeze([...(options.issues ?? [])]);
    if (options.isRetryable !== undefined) this.isRetryable = options.isRetryable;
    this.failure = deepFreeze(
      toJsonSafe({
        ...(options.details ?? {}),
        code,
        message,
        ...(options.issues?.length ? { issues: options.issues } : {}),
      }) as Failure,
    );
    Object.defineProperty(this, HARNESS_ERROR, { value: true });
  }

  /** True for any HarnessError, also one made by another copy of this module. */
  static is(value: unknown): value is HarnessError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[HARNESS_ERROR] === true;
  }

  /** Rebuilds an error from a journaled `failure` (e.g. to rethrow a recorded failure). */
  static fromFailure(failure: Failure, cause?: unknown): HarnessError {
    const { code, message, issues, ...details } = failure;
    return new HarnessError(code, message, { details, issues, cause });
  }
}

/** Seed 003 `AgentErrorInfo`: the normalised view of any thrown value. */
export interface ErrorInfo {
  readonly code: string;
  readonly codes: readonly string[];
  readonly issues: readonly Issue[];
  readonly isRetryable?: boolean;
  readonly cause: unknown;
}

/**
 * Turns any thrown value into seed 003's `{ code, codes, issues, isRetryable?, cause }` view.
 * `codes` lists the codes along the cause chain, outermost first. A value with no code is `UNKNOWN`.
 */
export function getErrorInfo(error: unknown): ErrorInfo {
  const codes: string[] = [];
  const issues: Issue[] = [];
  let isRetryable: boolean | undefined;
  let current: unknown = error;
  const seen = new Set<unknown>();
  while (current !== undefined && current !== null && !seen.has(current)) {
    seen.add(current);
    if (typeof current !== 'object') break;
    const record = current as { code?: unknown; issues?: unknown; errors?: unknown; isRetryable?: unknown; cause?: unknown };
    if (typeof record.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(record.code)) codes.push(record.code);
    if (isRetryable === undefined && typeof record.isRetryable === 'boolean') isRetryable = record.isRetryable;
    const found = Array.isArray(record.issues) ? record.issues : Array.isArray(record.errors) ? record.errors : [];
    if (issues.length === 0) for (const issue of found) if (isIssue(issue)) issues.push(issue);
    current = record.cause;
  }
  const info: ErrorInfo = {
    code: codes[0] ?? 'UNKNOWN',
    codes: codes.length ? codes : ['UNKNOWN'],
    issues,
    ...(isRetryable === undefined ? {} : { isRetryable }),
    cause: error,
  };
  return info;
}

function isIssue(value: unknown): value is Issue {
  return typeof value === 'object' && value !== null && typeof (value as Issue).message === 'string' && typeof (value as Issue).code === 'string';
}

/** A `Failure` for any thrown value: HarnessError keeps its own; anything else becomes `fallbackCode`. */
export function toFailure(error: unknown, fallbackCode = 'UNKNOWN'): Failure {
  if (HarnessError.is(error)) return error.failure;
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : safeString(error);
  return deepFreeze({ code: fallbackCode, message });
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Copies a value into plain JSON: drops `undefined` (null inside arrays), turns non-finite numbers
 * into null, bigints into strings, Dates into ISO strings, Errors into `{name, message}`, and cuts
 * cycles (`'[cycle]'`). Iterative, so a deeply nested detail cannot overflow the stack while an error
 * is being built. Used so a `failure` can always be journaled.
 */
export function toJsonSafe(value: unknown, seen: WeakSet<object> = new WeakSet<object>()): unknown {
  const top = safeLeaf(value);
  if (top !== CONTAINER) return top;
  if (seen.has(value as object)) return '[cycle]';
  const root = shell(value as object);
  // Depth-first: fill a container, then its child containers; `seen` holds the current path only,
  // so a value shared by two branches is copied twice, and only a true cycle is cut.
  const stack: ({ source: object; target: unknown[] | Record<string, unknown> } | { exit: object })[] = [];
  if (root !== null) stack.push({ source: value as object, target: root });
  while (stack.length > 0) {
    const task = stack.pop()!;
    if ('exit' in task) {
      seen.delete(task.exit);
      continue;
    }
    const { source, target } = task;
    seen.add(source);
    stack.push({ exit: source });
    const children: { source: object; target: unknown[] | Record<string, unknown> }[] = [];
    const convert = (item: unknown): unknown => {
      const leaf = safeLeaf(item);
      if (leaf !== CONTAINER) return leaf;
      if (seen.has(item as object)) return '[cycle]';
      const copy = shell(item as object);
      if (copy === null) return errorShape(item as Error);
      children.push({ source: item as object, target: copy });
      return copy;
    };
    if (Array.isArray(target)) {
      const items = source as unknown[];
      for (let i = 0; i < items.length; i++) target.push(convert(items[i]) ?? null);
    } else {
      for (const [key, item] of Object.entries(source)) {
        const safe = convert(item);
        if (safe !== undefined) target[key] = safe;
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return root ?? errorShape(value as Error);
}

const CONTAINER = Symbol('container');

/** The JSON value of a non-container, or CONTAINER for an object that needs copying. */
function safeLeaf(value: unknown): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? (Object.is(value, -0) ? 0 : value) : null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object') return undefined;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  return CONTAINER;
}

/** An empty copy to fill (null for an Error, which becomes `{name, message}` and is not descended). */
function shell(value: object): unknown[] | Record<string, unknown> | null {
  if (value instanceof Error) return null;
  return Array.isArray(value) ? [] : {};
}

function errorShape(error: Error): { name: string; message: string } {
  return { name: String(error.name), message: String(error.message) };
}
