/**
 * Server connections shared across plugin generations, keyed by a hash of the server's config.
 *
 * A hot reload sets the new generation up while the old one still serves: the new one acquires
 * its servers first, then the old one releases its own. A server whose config did not change is
 * therefore acquired twice for a moment and never stopped — no gap, same process, same session;
 * a server that left (or changed) drops to no holder and is closed. The table lives on
 * `globalThis`, since a reload re-evaluates this module (a module-level Map would start empty).
 */
import { createHash } from 'node:crypto';
import type { McpServerConfig, RestartConfig } from './config.ts';
import { McpConnection } from './connection.ts';

interface Held {
  readonly connection: McpConnection;
  holderCount: number;
}

const KEY = Symbol.for('harness-runtime/plugins/mcp/connections');
type Table = Map<string, Held>;

function table(): Table {
  const global = globalThis as { [KEY]?: Table };
  global[KEY] ??= new Map();
  return global[KEY];
}

/** A stable hash of everything that makes a connection (headers included; the hash is never shown). */
export function configHash(server: McpServerConfig, restart: RestartConfig): string {
  return createHash('sha256').update(stableJson({ server, restart })).digest('hex');
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A hold on a connection; `release()` (once) closes it when nobody else holds it. */
export interface ConnectionLease {
  readonly connection: McpConnection;
  /** True when the connection was already running (carried over from an earlier generation). */
  readonly carried: boolean;
  release(): Promise<void>;
}

export function acquireConnection(server: McpServerConfig, restart: RestartConfig): ConnectionLease {
  const connections = table();
  const hash = configHash(server, restart);
  let held = connections.get(hash);
  const carried = held !== undefined && held.connection.state !== 'closed';
  if (held === undefined || !carried) {
    held = { connection: new McpConnection(server, restart), holderCount: 0 };
    connections.set(hash, held);
    held.connection.start();
  }
  held.holderCount++;
  const entry = held;
  let released = false;
  return {
    connection: entry.connection,
    carried,
    async release() {
      if (released) return;
      released = true;
      entry.holderCount--;
      if (entry.holderCount > 0) return;
      if (connections.get(hash) === entry) connections.delete(hash);
      await entry.connection.close();
    },
  };
}

/** The connections held now (for tests and diagnostics). */
export function heldConnections(): readonly McpConnection[] {
  return [...table().values()].map((held) => held.connection);
}
