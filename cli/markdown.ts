/**
 * Markdown of the model's answers rendered for a terminal (marked + marked-terminal): bold, code,
 * fences (highlighted), lists, headings, tables. Only in a terminal with colour — piped output,
 * `NO_COLOR` and `--no-color` keep the text exactly as the model wrote it.
 *
 * The text is made {@link printable} before it is parsed, so the model's own control characters are
 * shown (␛…), never obeyed; only the renderer's styling reaches the terminal. Streamed text is
 * rendered a block at a time ({@link MarkdownStream}): a paragraph, list or code fence is printed
 * once it is complete, the rest when the text block ends.
 */
import { type Io, terminalStream } from './env.ts';

/** Renders a complete piece of markdown (already printable) for the terminal. */
export type RenderMarkdown = (markdown: string) => string;

/**
 * The renderer for `io`, or undefined when the output is not a colour terminal. The libraries are
 * loaded only then (they are not small), once.
 */
export async function markdownFor(io: Io): Promise<RenderMarkdown | undefined> {
  if (!io.interactive || !io.c.isColorSupported) return undefined;
  const [{ Marked }, { markedTerminal }] = await Promise.all([import('marked'), import('marked-terminal')]);
  const width = Math.max(40, Math.min(terminalStream(io.out).columns ?? 100, 120));
  const marked = new Marked(markedTerminal({ width, reflowText: false, tab: 2 }) as Parameters<InstanceType<typeof Marked>['use']>[0]);
  return (markdown) => (marked.parse(markdown, { async: false }) as string).replace(/\n+$/, '\n');
}

/**
 * Streamed markdown, rendered a block at a time: {@link push} returns the rendering of the blocks
 * completed so far (text up to the last blank line outside a code fence), {@link flush} the rest.
 */
export class MarkdownStream {
  private buffer = '';
  private blockCount = 0;

  constructor(private readonly render: RenderMarkdown) {}

  push(text: string): string {
    this.buffer += text;
    const end = completeBlocksEnd(this.buffer);
    if (end === 0) return '';
    const done = this.buffer.slice(0, end);
    this.buffer = this.buffer.slice(end);
    return this.rendered(done);
  }

  flush(): string {
    const rest = this.buffer;
    this.buffer = '';
    return this.rendered(rest);
  }

  private rendered(markdown: string): string {
    if (markdown.trim() === '') return '';
    const out = this.render(markdown);
    return this.blockCount++ === 0 ? out : `\n${out}`;
  }
}

/** Where the complete blocks of `text` end: after its last blank line outside a code fence, or after a closing fence. */
export function completeBlocksEnd(text: string): number {
  let inFence = false;
  let end = 0;
  let position = 0;
  for (const line of text.split(/(?<=\n)/)) {
    if (!line.endsWith('\n')) break; // a line still being written
    position += line.length;
    if (/^ {0,3}(```|~~~)/.test(line)) {
      inFence = !inFence;
      if (!inFence) end = position;
    } else if (!inFence && line.trim() === '') end = position;
  }
  return end;
}
