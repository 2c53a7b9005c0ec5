/**
 * The chat's keyboard input in a terminal, in front of Node's readline: bracketed paste and a key
 * for a newline, which readline alone does not have (every line end submits).
 *
 * - Bracketed paste (`ESC[?2004h`): the terminal wraps a paste in `ESC[200~ … ESC[201~`; the line
 *   ends and tabs inside become {@link NEWLINE_MARK} / {@link TAB_MARK} (Unicode control pictures,
 *   ␤ and ␉), which readline edits as ordinary characters — so a pasted block is one prompt, shown
 *   on the prompt line with ␤ where its lines break, and a tab in it does not trigger completion.
 * - Alt-Enter (`ESC CR`) and Ctrl-J (a lone LF; Enter sends CR) insert a newline the same way.
 *
 * {@link fromEditedLine} turns the marks of a submitted line back into line ends and tabs.
 */
import { PassThrough } from 'node:stream';

/** Stands for a line break in the line being edited (U+2424 SYMBOL FOR NEWLINE). */
export const NEWLINE_MARK = '\u2424';
/** Stands for a pasted tab (U+2409 SYMBOL FOR HORIZONTAL TABULATION). */
export const TAB_MARK = '\u2409';

const PASTE_START = '\x1b[200~';
const PASTE_END = '\x1b[201~';
/** Terminal modes: bracketed paste on / off. */
export const BRACKETED_PASTE_ON = '\x1b[?2004h';
export const BRACKETED_PASTE_OFF = '\x1b[?2004l';

/** A submitted line with its marks made line ends and tabs again. */
export function fromEditedLine(line: string): string {
  return line.replaceAll(NEWLINE_MARK, '\n').replaceAll(TAB_MARK, '\t');
}

/**
 * Rewrites terminal input for readline (see the module doc). Stateful: a paste, or a marker, may be
 * split across reads.
 */
export class PasteFilter {
  private pasting = false;
  /** The end of the last read when it could be the start of a marker (or ESC of Alt-Enter). */
  private carry = '';
  /** The last character passed on was a CR (so a following LF is the rest of a CRLF, not Ctrl-J). */
  private afterCR = false;

  push(data: string): string {
    let input = this.carry + data;
    this.carry = '';
    let out = '';
    while (input.length > 0) {
      if (this.pasting) {
        const end = input.indexOf(PASTE_END);
        if (end < 0) {
          const keep = partialSuffix(input, PASTE_END);
          out += pasted(input.slice(0, input.length - keep));
          this.carry = input.slice(input.length - keep);
          return out;
        }
        out += pasted(input.slice(0, end));
        input = input.slice(end + PASTE_END.length);
        this.pasting = false;
        this.afterCR = false;
        continue;
      }
      const start = input.indexOf(PASTE_START);
      const typed = start < 0 ? input : input.slice(0, start);
      const keep = start < 0 ? partialSuffix(typed, PASTE_START) : 0;
      out += this.typed(typed.slice(0, typed.length - keep));
      if (start < 0) {
        this.carry = typed.slice(typed.length - keep);
        return out;
      }
      input = input.slice(start + PASTE_START.length);
      this.pasting = true;
    }
    return out;
  }

  /** Typed keys: Alt-Enter and a lone LF (Ctrl-J) insert a newline; everything else passes. */
  private typed(text: string): string {
    let out = '';
    for (let i = 0; i < text.length; i++) {
      const char = text[i]!;
      if (char === '\x1b' && (text[i + 1] === '\r' || text[i + 1] === '\n')) {
        out += NEWLINE_MARK;
        i++;
        this.afterCR = false;
        continue;
      }
      if (char === '\n' && !this.afterCR) {
        out += NEWLINE_MARK;
        continue;
      }
      out += char;
      this.afterCR = char === '\r';
    }
    return out;
  }
}

function pasted(text: string): string {
  return text.replace(/\r\n|\r|\n/g, NEWLINE_MARK).replaceAll('\t', TAB_MARK);
}

/** How many characters at the end of `text` are a proper start of `marker` (ESC alone counts: Alt-Enter). */
function partialSuffix(text: string, marker: string): number {
  for (let length = Math.min(marker.length - 1, text.length); length > 0; length--) if (marker.startsWith(text.slice(-length))) return length;
  return 0;
}

/**
 * A stream readline can read a terminal from: `stdin` passed through a {@link PasteFilter}, with
 * `isTTY` and `setRawMode` of the real terminal (readline switches raw mode itself).
 */
export function filteredTerminalInput(stdin: NodeJS.ReadStream): NodeJS.ReadableStream & { isTTY: true; setRawMode(mode: boolean): unknown; detach(): void } {
  const filter = new PasteFilter();
  const input = new PassThrough({ encoding: 'utf8' }) as unknown as PassThrough & { isTTY: true; setRawMode(mode: boolean): unknown; detach(): void };
  input.isTTY = true;
  input.setRawMode = (mode: boolean) => stdin.setRawMode(mode);
  stdin.setEncoding('utf8');
  const onData = (data: string) => {
    const text = filter.push(data);
    if (text) input.write(text);
  };
  const onEnd = () => input.end();
  stdin.on('data', onData);
  stdin.on('end', onEnd);
  stdin.resume(); // a prompt before (the session picker) may have paused it
  input.detach = () => {
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    stdin.pause();
  };
  return input;
}
