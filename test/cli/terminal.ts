/**
 * A real terminal for CLI tests: a detached tmux session on a private server socket; keys go in with
 * `send-keys`, the screen comes out with `capture-pane`.
 */
import { execFileSync, spawnSync } from 'node:child_process';

export const hasTmux = spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;

export class Terminal {
  private readonly socket = `harness-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  /** Starts `command` (a shell command line) in a 160×50 terminal. */
  constructor(command: string, env: NodeJS.ProcessEnv) {
    execFileSync('tmux', ['-L', this.socket, '-f', '/dev/null', 'new-session', '-d', '-s', 'main', '-x', '160', '-y', '50', command], { env });
  }

  /** Types text (literally), optionally followed by Enter. */
  type(text: string, enter = true): void {
    execFileSync('tmux', ['-L', this.socket, 'send-keys', '-t', 'main', '-l', text]);
    if (enter) this.keys('Enter');
  }

  /** Pastes text as a terminal does: bracketed (`ESC[200~ … ESC[201~`) when the program asked for it, line ends as CR. */
  paste(text: string): void {
    execFileSync('tmux', ['-L', this.socket, 'set-buffer', '-b', 'paste', '--', text]);
    execFileSync('tmux', ['-L', this.socket, 'paste-buffer', '-p', '-d', '-b', 'paste', '-t', 'main']);
  }

  keys(...keys: string[]): void {
    execFileSync('tmux', ['-L', this.socket, 'send-keys', '-t', 'main', ...keys]);
  }

  /** The screen and its scrollback, wrapped lines joined. */
  screen(): string {
    const result = spawnSync('tmux', ['-L', this.socket, 'capture-pane', '-p', '-J', '-S', '-2000', '-t', 'main'], { encoding: 'utf8' });
    return result.status === 0 ? result.stdout : '';
  }

  /** Waits until `test` holds for the screen; returns it. */
  async waitFor(test: (screen: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let screen = '';
    while (Date.now() < deadline) {
      screen = this.screen();
      if (test(screen)) return screen;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}; the screen was:\n${screen}`);
  }

  /** Appends everything the program writes to the terminal from now on, escapes and all, to `file`. */
  record(file: string): void {
    execFileSync('tmux', ['-L', this.socket, 'pipe-pane', '-o', '-t', 'main', `cat >> '${file}'`]);
  }

  close(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'], { stdio: 'ignore' });
  }
}

export function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}
