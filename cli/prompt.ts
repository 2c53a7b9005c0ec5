/**
 * The size limit of a prompt given to `harness run`, `chat` and `dev`. An unbounded one (20 MB piped
 * into `harness run -`) would be journaled whole and sent to the model whole; `harness serve` bounds
 * its request bodies the same way (413 beyond `--max-body-bytes`).
 */
import { HarnessError } from '../runtime/index.ts';
import { formatCount } from './format.ts';

/** The default limit, bytes of UTF-8: serve's default `maxBodyBytes` (1 MiB). */
export const DEFAULT_MAX_PROMPT_BYTES = 1024 * 1024;

const MIB = 1024 * 1024;

/**
 * The `PROMPT_TOO_LARGE` error for a prompt of `byteCount` bytes when that is more than `maxBytes`
 * (default {@link DEFAULT_MAX_PROMPT_BYTES}), else undefined. The message names both and the flag
 * that raises the limit; `failure.details` is `{ byteCount, maxBytes }`.
 */
export function promptTooLarge(byteCount: number, maxBytes = DEFAULT_MAX_PROMPT_BYTES): HarnessError | undefined {
  if (byteCount <= maxBytes) return undefined;
  const raised = Math.ceil(byteCount / MIB) * MIB;
  return new HarnessError(
    'PROMPT_TOO_LARGE',
    `The prompt is ${formatCount(byteCount)} bytes (${mib(byteCount)}), more than the ${formatCount(maxBytes)} bytes (${mib(maxBytes)}) a prompt may have. ` +
      `Pass --max-prompt-bytes <bytes> to raise the limit (e.g. --max-prompt-bytes ${raised}), or put the text in a file of the workspace for the agent to read.`,
    { details: { byteCount, maxBytes } },
  );
}

/** Throws {@link promptTooLarge}'s error when there is one. */
export function checkPromptSize(byteCount: number, maxBytes = DEFAULT_MAX_PROMPT_BYTES): void {
  const error = promptTooLarge(byteCount, maxBytes);
  if (error) throw error;
}

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(bytes < MIB ? 2 : 1)} MiB`;
}

/**
 * The prompt of `harness run -`: `input` to its end as UTF-8, without the trailing white space.
 * Past `maxBytes` the rest is only counted, not kept, so the error can say the size without holding it.
 */
export async function readPrompt(input: AsyncIterable<string | Buffer>, maxBytes = DEFAULT_MAX_PROMPT_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let byteCount = 0;
  for await (const chunk of input) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    byteCount += buffer.length;
    if (byteCount <= maxBytes) chunks.push(buffer);
  }
  checkPromptSize(byteCount, maxBytes);
  return Buffer.concat(chunks).toString('utf8').replace(/\s+$/, '');
}
