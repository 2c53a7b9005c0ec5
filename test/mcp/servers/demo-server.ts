/**
 * The MCP server the tests talk to, built with the official SDK's server side (`McpServer`). The same
 * tools over stdio (stdio-server.ts) and Streamable HTTP (http-server.ts):
 *
 * - `echo` (read-only): `{ text }` → the text back, prefixed with the server's name and transport.
 * - `add_note` (not read-only): `{ note }` → appends a line to `$MCP_STATE_FILE`, answers "noted".
 * - `slow` (read-only): `{ ms }` → answers after `ms`; writes `slow-started <pid>` to the state file
 *   first, so a test knows the call is in flight (to kill the process mid-call).
 * - `freeze` (read-only): `{ ms }` → blocks the server's event loop for `ms` (a hung server: it answers
 *   nothing, not even a ping).
 * - `enable_extra`: registers the tool `extra` at run time; the SDK then sends
 *   `notifications/tools/list_changed`.
 * - `media`: a text, an image and an embedded text resource, to check the mapping to content blocks.
 * - `fail`: a tool result with `isError: true`.
 * - `progress` (read-only): `{ steps }` → a `notifications/progress` per step, then "done".
 */
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

/** A 1×1 PNG. */
export const PIXEL_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

function record(line: string): void {
  const file = process.env.MCP_STATE_FILE;
  if (file) appendFileSync(file, `${line}\n`);
}

export function buildDemoServer(transport: 'stdio' | 'http'): McpServer {
  const server = new McpServer({ name: 'demo', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes the text back.', inputSchema: { text: z.string().describe('what to echo') }, annotations: { readOnlyHint: true } }, async ({ text }) => ({
    content: [{ type: 'text', text: `echo (${transport}): ${text}` }],
  }));
  server.registerTool(
    'add_note',
    { description: 'Adds a note to the notes file.', inputSchema: { note: z.string() }, annotations: { readOnlyHint: false, destructiveHint: false } },
    async ({ note }) => {
      record(`note ${note}`);
      return { content: [{ type: 'text', text: `noted: ${note}` }] };
    },
  );
  server.registerTool('slow', { description: 'Answers after a delay.', inputSchema: { ms: z.number().int().nonnegative() }, annotations: { readOnlyHint: true } }, async ({ ms }) => {
    record(`slow-started ${process.pid}`);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
  });
  server.registerTool('freeze', { description: 'Blocks the server for a while.', inputSchema: { ms: z.number().int().nonnegative() }, annotations: { readOnlyHint: true } }, async ({ ms }) => {
    record(`freeze-started ${process.pid}`);
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // Busy: no I/O is served meanwhile.
    }
    return { content: [{ type: 'text', text: `was frozen for ${ms} ms` }] };
  });
  server.registerTool('enable_extra', { description: 'Adds the tool "extra" to this server.' }, async () => {
    if (!server.isConnected()) throw new Error('not connected');
    server.registerTool('extra', { description: 'A tool that appeared at run time.', inputSchema: { n: z.number() }, annotations: { readOnlyHint: true } }, async ({ n }) => ({
      content: [{ type: 'text', text: `extra: ${n * 2}` }],
    }));
    return { content: [{ type: 'text', text: 'extra enabled' }] };
  });
  server.registerTool('media', { description: 'Returns a text, an image and a resource.', annotations: { readOnlyHint: true } }, async () => ({
    content: [
      { type: 'text', text: 'a picture:' },
      { type: 'image', data: PIXEL_PNG_BASE64, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'file:///notes/readme.txt', mimeType: 'text/plain', text: 'resource body' } },
      { type: 'resource_link', uri: 'file:///notes/other.txt', name: 'other.txt' },
    ],
  }));
  server.registerTool('progress', { description: 'Reports progress.', inputSchema: { steps: z.number().int().positive() }, annotations: { readOnlyHint: true } }, async ({ steps }, extra) => {
    const progressToken = extra._meta?.progressToken;
    for (let step = 1; step <= steps && progressToken !== undefined; step++) {
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: step, total: steps, message: `step ${step}` } });
    }
    return { content: [{ type: 'text', text: `done in ${steps} steps` }] };
  });
  server.registerTool('fail', { description: 'Always fails.', annotations: { readOnlyHint: true } }, async () => ({ content: [{ type: 'text', text: 'it went wrong' }], isError: true }));
  return server;
}
