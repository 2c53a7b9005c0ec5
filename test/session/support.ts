/**
 * Helpers for the session tests: fixture paths (read in place from ../shared/fixtures, never
 * copied), temp data directories under `test/.tmp-session-*` (git-ignored), and validity checks
 * over a list of events.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnySessionEvent, Message, SessionEvent } from '../../runtime/index.ts';
import { fixturesDir } from '../support/fixture-server.ts';

export const sessionTestDir = dirname(fileURLToPath(import.meta.url));
export const projectRoot = resolve(sessionTestDir, '..', '..');
/** The shared fixtures (`$HARNESS_FIXTURES_DIR`, else `<projectRoot>/../shared/fixtures`). */
export const fixturesRoot = fixturesDir;
export const dshRoot = join(fixturesRoot, 'dsh-sessions');

/** Every DeepSeek Harness session file under the fixtures, sorted (relative names for test titles). */
export function dshSessionFiles(): { name: string; path: string }[] {
  const out: { name: string; path: string }[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith('.jsonl')) out.push({ name: relative(dshRoot, path), path });
    }
  };
  walk(dshRoot);
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** A fresh data directory under test/ (git-ignored). */
export function tempDataDir(prefix = 'session'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(projectRoot, 'test', `.tmp-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Problems with a session's events as a history: a tool call without exactly one result, a result
 * without a call, a turn never closed, a tool-call block of the surface with no result.
 */
export function historyProblems(events: readonly AnySessionEvent[], surface?: readonly Message[]): string[] {
  const problems: string[] = [];
  const open = new Map<string, number>();
  let openTurn: number | undefined;
  for (const event of events) {
    if (event.type === 'tool/call') {
      const { callId } = (event as SessionEvent<'tool/call'>).data;
      if (open.has(callId)) problems.push(`seq ${event.seq}: tool call ${callId} journaled twice before a result`);
      open.set(callId, event.seq);
    } else if (event.type === 'tool/result') {
      const { callId } = (event as SessionEvent<'tool/result'>).data;
      if (!open.delete(callId)) problems.push(`seq ${event.seq}: tool result ${callId} answers no open tool/call`);
    } else if (event.type === 'turn/start') {
      if (openTurn !== undefined) problems.push(`seq ${event.seq}: turn started inside turn ${openTurn}`);
      openTurn = (event as SessionEvent<'turn/start'>).data.turn;
    } else if (event.type === 'turn/end') {
      if (openTurn === undefined) problems.push(`seq ${event.seq}: turn/end without a turn`);
      openTurn = undefined;
    }
  }
  for (const [callId, seq] of open) problems.push(`tool call ${callId} (seq ${seq}) has no result`);
  if (openTurn !== undefined) problems.push(`turn ${openTurn} is never closed`);
  if (surface !== undefined) {
    const unanswered = new Set<string>();
    for (const message of surface) {
      for (const block of message.content) {
        if (block.type === 'tool-call') unanswered.add(block.id);
        else if (block.type === 'tool-result') {
          if (!unanswered.delete(block.toolCallId)) problems.push(`surface: tool result ${block.toolCallId} follows no tool call`);
        }
      }
    }
    for (const id of unanswered) problems.push(`surface: tool call ${id} has no result`);
  }
  return problems;
}
