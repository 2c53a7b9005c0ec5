/**
 * Where a key is written in a config's source, for an `INVALID_CONFIG` that names `file:line:col`.
 *
 * A config is a module that exports an object, so a schema issue knows the key's path, not its
 * line. This scans the source — JavaScript, TypeScript or JSON — for the key written as a property
 * (`key:`, `"key":` or `'key':` right after `{` or `,`), skipping comments, strings and template
 * literals. It is a scan, not a parse (no compiler is needed at run time): a location is given only
 * when the key is written exactly once, and never guessed when it is not.
 *
 * And where a syntax error is that tsx's compiler (esbuild) reported: {@link syntaxErrorOf}.
 */
import { readFileSync } from 'node:fs';

/** A 1-based line and column in a source text. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/** Every place `key` is written as an object property in `source` (1-based line and column of its first character). */
export function findKeys(source: string, key: string): SourcePosition[] {
  const found: number[] = [];
  const length = source.length;
  let previous = '{'; // the last significant character: a key follows `{` or `,`
  let i = 0;
  /** The index after whitespace and comments from `j`. */
  const skipBlank = (from: number): number => {
    let j = from;
    while (j < length) {
      const ch = source[j]!;
      if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '\f' || ch === '\v' || ch === '\u00a0' || ch === '\ufeff') j++;
      else if (ch === '/' && source[j + 1] === '/') {
        const end = source.indexOf('\n', j);
        j = end === -1 ? length : end + 1;
      } else if (ch === '/' && source[j + 1] === '*') {
        const end = source.indexOf('*/', j + 2);
        j = end === -1 ? length : end + 2;
      } else break;
    }
    return j;
  };
  while (i < length) {
    const start = skipBlank(i);
    if (start >= length) break;
    const ch = source[start]!;
    if (ch === '"' || ch === "'") {
      let j = start + 1;
      let text = '';
      while (j < length && source[j] !== ch && source[j] !== '\n') {
        if (source[j] === '\\') {
          text += source[j + 1] ?? '';
          j += 2;
        } else text += source[j++];
      }
      const after = skipBlank(j + 1);
      if ((previous === '{' || previous === ',') && source[after] === ':' && text === key) found.push(start);
      previous = ch;
      i = j + 1;
    } else if (ch === '`') {
      i = skipTemplate(source, start + 1);
      previous = '`';
    } else if (/[A-Za-z_$]/.test(ch)) {
      let j = start + 1;
      while (j < length && /[\w$]/.test(source[j]!)) j++;
      const after = skipBlank(j);
      if ((previous === '{' || previous === ',') && source[after] === ':' && source.slice(start, j) === key) found.push(start);
      previous = 'a';
      i = j;
    } else if (ch === '/' && '(,=:[!&|?{};'.includes(previous)) {
      i = skipRegex(source, start + 1);
      previous = '/';
    } else {
      previous = ch;
      i = start + 1;
    }
  }
  return found.map((index) => positionOf(source, index));
}

/** The one place `key` is written as a property in `source`, or undefined when it is written there not once but never or several times. */
export function locateKey(source: string, key: string): SourcePosition | undefined {
  const found = findKeys(source, key);
  return found.length === 1 ? found[0] : undefined;
}

/** The index after a template literal's closing backtick (its `${…}` parts skipped, nested templates too). */
function skipTemplate(source: string, from: number): number {
  let j = from;
  while (j < source.length) {
    const ch = source[j]!;
    if (ch === '\\') j += 2;
    else if (ch === '`') return j + 1;
    else if (ch === '$' && source[j + 1] === '{') {
      let depth = 1;
      j += 2;
      while (j < source.length && depth > 0) {
        const inner = source[j]!;
        if (inner === '`') j = skipTemplate(source, j + 1);
        else if (inner === '"' || inner === "'") {
          j++;
          while (j < source.length && source[j] !== inner && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1;
          j++;
        } else {
          if (inner === '{') depth++;
          else if (inner === '}') depth--;
          j++;
        }
      }
    } else j++;
  }
  return j;
}

/** The index after a regular expression literal (character classes may hold a `/`). */
function skipRegex(source: string, from: number): number {
  let j = from;
  let inClass = false;
  while (j < source.length && source[j] !== '\n') {
    const ch = source[j]!;
    if (ch === '\\') j += 2;
    else if (ch === '/' && !inClass) return j + 1;
    else {
      if (ch === '[') inClass = true;
      else if (ch === ']') inClass = false;
      j++;
    }
  }
  return j;
}

function positionOf(source: string, index: number): SourcePosition {
  let line = 1;
  let lineStart = 0;
  for (let k = source.indexOf('\n'); k !== -1 && k < index; k = source.indexOf('\n', k + 1)) {
    line++;
    lineStart = k + 1;
  }
  return { line, column: index - lineStart + 1 };
}

/**
 * The 1-based column, in characters as an editor counts them (UTF-16 code units), of a 0-based
 * byte offset into `lineText` — what esbuild (tsx's compiler) reports as a location's column.
 */
export function columnOfByteOffset(lineText: string, byteOffset: number): number {
  return Buffer.from(lineText, 'utf8').subarray(0, byteOffset).toString('utf8').length + 1;
}

/** A syntax error tsx could not compile, as {@link transformErrorAt} reads it off the message. */
export interface TransformErrorLocation extends SourcePosition {
  /** The file esbuild names. */
  readonly file: string;
  /** What is wrong there (`Expected "]" but found "}"`). */
  readonly text: string;
}

/**
 * The first error of tsx's `TransformError` message (`Transform failed with 1 error:\n<file>:3:20: ERROR: <text>`),
 * whose column is esbuild's: 0-based and in bytes. `source` is that file's text: the column becomes
 * 1-based characters, as every other `file:line:col` of Harness (without it, only 1-based).
 * Undefined for any other message.
 */
export function transformErrorAt(message: string, source: string | undefined): TransformErrorLocation | undefined {
  const match = /^Transform failed with \d+ errors?:\n(.+?):(\d+):(\d+): ERROR: (.*)$/m.exec(message);
  if (match === null) return undefined;
  const line = Number(match[2]);
  const byteOffset = Number(match[3]);
  const lineText = source?.split(/\r?\n/)[line - 1];
  return { file: match[1]!, text: match[4]!, line, column: lineText === undefined ? byteOffset + 1 : columnOfByteOffset(lineText, byteOffset) };
}

/**
 * Where tsx's compiler found the syntax error behind `cause` (a `TransformError`), 1-based in
 * characters (the file is read to count them), or undefined for any other error.
 */
export function syntaxErrorOf(cause: unknown): TransformErrorLocation | undefined {
  if (!(cause instanceof Error) || cause.name !== 'TransformError') return undefined;
  const found = transformErrorAt(cause.message, undefined);
  if (found === undefined) return undefined;
  let source: string | undefined;
  try {
    source = readFileSync(found.file, 'utf8');
  } catch {
    source = undefined;
  }
  return transformErrorAt(cause.message, source);
}

/** `cause`'s message, with a syntax error's location said 1-based (and left out when it is in `file`, whose location goes in the error's details). */
export function causeMessage(cause: unknown, syntax: TransformErrorLocation | undefined, file: string): string {
  if (syntax !== undefined) return syntax.file === file ? syntax.text : `${syntax.file}:${syntax.line}:${syntax.column}: ${syntax.text}`;
  return cause instanceof Error ? cause.message : String(cause);
}
