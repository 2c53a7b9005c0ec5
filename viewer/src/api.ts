/**
 * The page's client of the serve API (cookbook/serve.md): JSON calls with the bearer token, and the
 * event stream read with fetch (EventSource cannot send a bearer header). The stream passes each
 * event on exactly once, in seq order: it keeps the last seq it passed on, drops any event at or
 * below it, and after a drop (or a gap) reconnects with `Last-Event-ID: <that seq>`, so the server
 * resends exactly what is missing.
 */
import type { JournalEvent } from './timeline.ts';

/** An error answer of the API (`{ error: { code, message } }`), or a network failure (`NETWORK`). */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status: number) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

export type StreamStatus = 'connecting' | 'open' | 'reconnecting' | 'closed' | 'unauthorized';

export class Api {
  readonly token: string;
  constructor(token: string) {
    this.token = token;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(path, {
        method,
        headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        cache: 'no-store',
      });
    } catch (error) {
      throw new ApiError('NETWORK', `The server did not answer (${error instanceof Error ? error.message : String(error)}).`, 0);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ApiError(error?.code ?? `HTTP_${response.status}`, error?.message ?? `HTTP ${response.status}`, response.status);
    }
    return parsed as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  /**
   * Streams the events of `sessionId` after seq `after`, then live, until `close()`. `onEvents`
   * gets each batch read from the socket (each event once, in seq order).
   */
  stream(sessionId: string, after: number, onEvents: (events: JournalEvent[]) => void, onStatus: (status: StreamStatus) => void): { close(): void; readonly lastSeq: number } {
    let last = after;
    let closed = false;
    let controller: AbortController | undefined;
    const run = async (): Promise<void> => {
      let delayMs = 250;
      while (!closed) {
        controller = new AbortController();
        onStatus(last === after ? 'connecting' : 'reconnecting');
        try {
          const response = await fetch(`/v1/sessions/${encodeURIComponent(sessionId)}/stream`, {
            headers: this.headers({ accept: 'text/event-stream', 'last-event-id': String(last) }),
            signal: controller.signal,
            cache: 'no-store',
          });
          if (response.status === 401) {
            onStatus('unauthorized');
            return;
          }
          if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
          onStatus('open');
          delayMs = 250;
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = '';
          let gap = false;
          while (!closed && !gap) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value;
            const batch: JournalEvent[] = [];
            for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
              const frame = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const data = frame
                .split('\n')
                .filter((line) => line.startsWith('data:'))
                .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
                .join('\n');
              if (data === '') continue;
              const event = JSON.parse(data) as JournalEvent;
              if (event.seq <= last) continue; // already passed on
              if (event.seq !== last + 1) {
                gap = true; // never skip a seq: ask again from the last one passed on
                break;
              }
              batch.push(event);
              last = event.seq;
            }
            if (batch.length > 0) onEvents(batch);
          }
          await reader.cancel().catch(() => undefined);
        } catch {
          // A dropped connection: reconnect below.
        }
        if (closed) break;
        onStatus('reconnecting');
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 5000);
      }
      onStatus('closed');
    };
    void run();
    return {
      close: () => {
        closed = true;
        controller?.abort();
      },
      get lastSeq() {
        return last;
      },
    };
  }
}
