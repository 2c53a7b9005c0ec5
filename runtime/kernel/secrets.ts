/**
 * The secret redactor: known secret values — configured API keys, the environment's `*_API_KEY`,
 * `*_TOKEN`, `*_SECRET`, `*_PASSWORD` variables, an exec `vault` — are replaced by
 * `[redacted <NAME>]` in everything the runtime journals (every event but the model's own stream
 * deltas: a model cannot echo a value it was never shown) and in everything the CLI prints.
 *
 * Values, not patterns: the check is one native `includes` per known value over a string, and a
 * string is only copied when it holds one. Process-wide (shared across plugin generations through
 * a `Symbol.for` slot), because a key registered by a provider plugin must be masked in the journal
 * and the terminal alike.
 */
import { formatWithOptions } from 'node:util';

/** Nesting below which {@link SecretRedactor.redactValue}'s check answers by itself (deeper: the copying walk). */
const CHECK_DEPTH = 64;
/** Containers the check visits at most (a tool call's records hold tens; a 2,000-call message ~10,000). */
const CHECK_NODES = 100_000;

/** Values shorter than this are not secrets worth masking (they would mask ordinary text). */
export const MIN_SECRET_LENGTH = 8;

/** Environment variable names whose values are secrets. */
export const SECRET_ENV_NAME = /(?:_API_KEY|_TOKEN|_SECRET|_PASSWORD|_ACCESS_KEY)$/i;

interface Secret {
  readonly value: string;
  readonly label: string;
  /** The value as it appears inside a JSON string (differs when it holds `"`, `\` or controls). */
  readonly json: string;
}

/** The set of known secret values (module comment): `add(value, name)`, `addFromEnv()`, `redact(text)` → text with each value as `[redacted <NAME>]`. The process's one is `secrets()`. */
export class SecretRedactor {
  private secrets: Secret[] = [];
  private readonly known = new Set<string>();

  /** How many values are masked. */
  get size(): number {
    return this.secrets.length;
  }

  /** Masks `value` from now on, as `[redacted <name>]`. Short or repeated values are ignored. */
  add(value: string | undefined, name: string): void {
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH || this.known.has(value)) return;
    this.known.add(value);
    // Longest first: a value that contains another is masked whole.
    // The same string when the JSON form is the value: `json !== value` is then a pointer compare,
    // not a compare of two equal strings (~70 ns each, on every string of every record).
    const json = JSON.stringify(value).slice(1, -1);
    this.secrets = [...this.secrets, { value, label: `[redacted ${name}]`, json: json === value ? value : json }].sort((a, b) => b.value.length - a.value.length);
  }

  /** Registers the secret-named variables of `env` (default `process.env`). */
  addFromEnv(env: NodeJS.ProcessEnv = process.env): void {
    for (const [name, value] of Object.entries(env)) if (SECRET_ENV_NAME.test(name)) this.add(value, name);
  }

  /** `text` with every known value masked (the same string when none occurs). */
  redact(text: string): string {
    const secrets = this.secrets;
    for (let i = 0; i < secrets.length; i++) {
      const secret = secrets[i]!;
      if (text.includes(secret.value)) text = text.replaceAll(secret.value, secret.label);
      if (secret.json !== secret.value && text.includes(secret.json)) text = text.replaceAll(secret.json, secret.label);
    }
    return text;
  }

  /**
   * A masker for text that arrives in pieces (a tool's live output): see {@link SecretStream}.
   * Each piece of output is masked, and a piece that may end inside a value is held back until the
   * next piece (or `flush()`) says whether it does.
   */
  stream(): SecretStream {
    return new SecretStream(this);
  }

  /**
   * Where `text` could still be cut inside a known value: the start of its longest suffix that is a
   * proper prefix of a value (or of its JSON form), moved back over any whole value straddling that
   * point; `text.length` when there is none. @internal (used by {@link SecretStream}).
   */
  safeEnd(text: string): number {
    let cut = text.length;
    const secrets = this.secrets;
    for (let s = 0; s < secrets.length; s++) {
      const secret = secrets[s]!;
      cut = prefixStart(text, secret.value, cut);
      if (secret.json !== secret.value) cut = prefixStart(text, secret.json, cut);
    }
    // A whole value across the cut would reach the output in two pieces: hold it all (masked next time).
    for (let moved = cut < text.length; moved; ) {
      moved = false;
      for (const secret of secrets) {
        for (const form of secret.json === secret.value ? [secret.value] : [secret.value, secret.json]) {
          const at = text.indexOf(form, Math.max(0, cut - form.length + 1));
          if (at !== -1 && at < cut && at + form.length > cut) {
            cut = at;
            moved = true;
          }
        }
      }
    }
    return cut;
  }

  /** True when `text` holds a known value. */
  holds(text: string): boolean {
    for (const secret of this.secrets) if (text.includes(secret.value)) return true;
    return false;
  }

  /**
   * Plain data with every string (and key) masked; the same object when nothing changed, else a
   * copy of the changed path. Cycles are not followed (the journal refuses them anyway).
   */
  redactValue<T>(value: T): T {
    if (this.secrets.length === 0) return value;
    this.checkBudget = CHECK_NODES;
    if (!this.mayHold(value, 0)) return value;
    return this.walk(value, new Map()) as T;
  }

  /** Containers {@link mayHold} may still visit in this check. */
  private checkBudget = 0;

  /**
   * False only when no string or key in `value` holds a known value: the check every journaled
   * record goes through (several per tool call), so it allocates nothing — no Set of visited
   * objects, no key arrays. Past {@link CHECK_DEPTH} or {@link CHECK_NODES} containers (which a
   * cycle, or a value shared many times over, reaches) it answers true and the copying walk, which
   * visits each object once, decides.
   */
  private mayHold(value: unknown, depth: number): boolean {
    if (typeof value === 'string') return this.holdsForm(value);
    if (typeof value !== 'object' || value === null) return false;
    if (depth === CHECK_DEPTH || --this.checkBudget < 0) return true;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (this.mayHold(value[i], depth + 1)) return true;
      return false;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return false; // the walk leaves instances as they are
    // for-in, not Object.keys (no array); an inherited enumerable key can only add a false alarm.
    for (const key in value) {
      if (this.holdsForm(key) || this.mayHold((value as Record<string, unknown>)[key], depth + 1)) return true;
    }
    return false;
  }

  /** True when `text` holds a known value or its JSON form (what {@link redact} would change). */
  private holdsForm(text: string): boolean {
    const secrets = this.secrets;
    for (let i = 0; i < secrets.length; i++) {
      const secret = secrets[i]!;
      if (text.includes(secret.value) || (secret.json !== secret.value && text.includes(secret.json))) return true;
    }
    return false;
  }

  /**
   * The copying walk. `done` maps each object visited to what it became, so a value reached twice
   * (shared by two branches) is masked at both places; an object met again while it is still being
   * walked (a cycle) is left as it is — the journal refuses cycles anyway.
   */
  private walk(value: unknown, done: Map<object, unknown>): unknown {
    if (typeof value === 'string') return this.redact(value);
    if (typeof value !== 'object' || value === null) return value;
    if (done.has(value)) return done.get(value);
    done.set(value, value);
    let result: unknown = value;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const next = this.walk(value[i], done);
        if (next !== value[i]) {
          out ??= value.slice();
          out[i] = next;
        }
      }
      result = out ?? value;
    } else if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) {
      let out: Record<string, unknown> | undefined;
      for (const key of Object.keys(value)) {
        const item = (value as Record<string, unknown>)[key];
        const next = this.walk(item, done);
        const maskedKey = this.redact(key);
        if (next !== item || maskedKey !== key) {
          out ??= { ...(value as Record<string, unknown>) };
          if (maskedKey !== key) delete out[key];
          out[maskedKey] = next;
        }
      }
      result = out ?? value;
    }
    done.set(value, result);
    return result;
  }
}

/** The start of the longest suffix of `text` that is a proper prefix of `value`, if it starts before `cut`; else `cut`. */
function prefixStart(text: string, value: string, cut: number): number {
  const first = value.charCodeAt(0);
  for (let i = Math.max(0, text.length - value.length + 1); i < cut; i++) {
    if (text.charCodeAt(i) === first && value.startsWith(text.slice(i))) return i;
  }
  return cut;
}

/**
 * Masks text that arrives in pieces (made by {@link SecretRedactor.stream}): a known value split
 * across two pieces is still masked. `push(piece)` returns what can be shown now — masked, without
 * the end of the text that could be the start of a value (held back: at most the longest value's
 * length minus one); `flush()` returns what is held, masked, when no piece follows. The
 * concatenation of every result equals `redact()` of the whole text.
 */
export class SecretStream {
  private held = '';

  constructor(private readonly redactor: SecretRedactor) {}

  /** What of `held + piece` can be shown now, masked. */
  push(piece: string): string {
    const redactor = this.redactor;
    if (redactor.size === 0 && this.held === '') return piece;
    const text = this.held + piece;
    const cut = redactor.safeEnd(text);
    this.held = text.slice(cut);
    return redactor.redact(cut === text.length ? text : text.slice(0, cut));
  }

  /** The text still held back, masked ('' when none); the stream is empty afterwards. */
  flush(): string {
    const rest = this.held;
    this.held = '';
    return rest === '' ? '' : this.redactor.redact(rest);
  }
}

const SLOT = Symbol.for('harness.secrets');

/** The process's redactor (the environment's secret-named variables are registered on first use). */
export function secrets(): SecretRedactor {
  const holder = globalThis as typeof globalThis & { [SLOT]?: SecretRedactor };
  let redactor = holder[SLOT];
  if (redactor === undefined) {
    redactor = holder[SLOT] = new SecretRedactor();
    redactor.addFromEnv();
  }
  return redactor;
}

/** C0 controls but \t and \n, DEL, C1 controls, bidi embeddings/overrides/isolates (as the CLI's `printable`). */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function visible(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code); // ␛ for ESC: Unicode control pictures
  if (code === 0x7f) return '␡';
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/** A logger of the shape both provider SDKs take (`ClientOptions.logger`). */
export interface SdkLogger {
  error(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  info(message: string, ...rest: unknown[]): void;
  debug(message: string, ...rest: unknown[]): void;
}

/**
 * A logger for a provider SDK client: each call becomes one line `<source> <level>: <text>` on
 * stderr (or `write`), with known secrets masked and every control character made visible (ESC →
 * ␛) — an SDK's default `console` logger would print what a provider sent (an unparseable SSE
 * frame, say) raw to the terminal.
 */
export function sdkLogger(source: string, write: (line: string) => void = (line) => void process.stderr.write(line)): SdkLogger {
  const log =
    (level: string) =>
    (message: string, ...rest: unknown[]): void => {
      const text = secrets()
        .redact(formatWithOptions({ colors: false }, message, ...rest))
        .replace(/\r\n/g, '\n')
        .replace(CONTROL, visible);
      write(`${source} ${level}: ${text}\n`);
    };
  return { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') };
}
