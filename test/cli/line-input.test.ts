/**
 * The chat's terminal input filter (cli/line-input.ts): a bracketed paste is one line with ␤ where
 * its lines break (markers split across reads included), Alt-Enter and Ctrl-J insert a newline,
 * Enter (CR, or CRLF) still submits, and a submitted line gets its line ends and tabs back.
 */
import { describe, expect, it } from 'vitest';
import { fromEditedLine, NEWLINE_MARK as NL, PasteFilter, TAB_MARK as TAB } from '../../cli/line-input.ts';

const through = (...reads: string[]): string => {
  const filter = new PasteFilter();
  return reads.map((read) => filter.push(read)).join('');
};

describe('the paste filter', () => {
  it('turns the line ends and tabs of a bracketed paste into marks, and drops the markers', () => {
    expect(through('\x1b[200~one\rtwo\r\nthree\n\tfour\x1b[201~\r')).toBe(`one${NL}two${NL}three${NL}${TAB}four\r`);
  });

  it('finds markers split across reads, and holds back a lone ESC until the next read', () => {
    expect(through('x\x1b[2', '00~a\rb\x1b', '[201', '~\r')).toBe(`xa${NL}b\r`);
    expect(through('\x1b', '\r')).toBe(NL); // Alt-Enter in two reads
  });

  it('Alt-Enter and a lone LF (Ctrl-J) are newlines; CR and CRLF stay Enter', () => {
    expect(through('a\x1b\rb\nc\r')).toBe(`a${NL}b${NL}c\r`);
    expect(through('a\r\nb\r', '\n')).toBe('a\r\nb\r\n');
  });

  it('passes other escape sequences (arrows) on', () => {
    expect(through('\x1b[A\x1b[D')).toBe('\x1b[A\x1b[D');
  });

  it('a submitted line gets its line ends and tabs back', () => {
    expect(fromEditedLine(`one${NL}${TAB}two`)).toBe('one\n\ttwo');
  });
});
