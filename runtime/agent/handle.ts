/** What hooks and tools see of a running session (DESIGN "The agent loop"). */
import type { AppendOptions, SessionState } from '../session/types.ts';
import type { SessionEvent, SessionEventMap, SessionEventType, SessionHeader } from '../session/events.ts';

/** What hooks see of a running session: its state and the right to journal events of their own. */
export interface SessionHandle {
  readonly id: string;
  /** The workspace directory (absolute). */
  readonly cwd: string;
  /** The journal's header (a child session's names its parent: `parentSession`). */
  readonly header: SessionHeader;
  /** The live fold. */
  readonly state: SessionState;
  append<T extends SessionEventType>(type: T, data: SessionEventMap[T], options?: AppendOptions): Promise<SessionEvent<T>>;
  checkpoint(): Promise<void>;
}
