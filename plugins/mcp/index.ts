/**
 * mcp: tools of MCP servers as Harness tools (issue 20 item 3; seed 000 `ToolConfig.mcpServers`),
 * on the official `@modelcontextprotocol/sdk` client.
 *
 * - Servers come from the config (`servers: [{ name, transport: 'stdio', command, args, env, cwd } |
 *   { name, transport: 'http', url, headers }]`, see config.ts), over stdio or Streamable HTTP.
 * - Each server tool is registered as `<server>__<tool>` with its JSON Schema unchanged and
 *   permission `read` (the server's `readOnlyHint: true`) or `write`, unless the config says otherwise.
 *   Calls go through the agent loop like any tool: approval, then `tools/execute` with the central
 *   close-out (timeout, head-kept truncation, errors as results). Text, image and resource results
 *   become content blocks (tools.ts); the server's progress notifications are the call's live output.
 * - A server that crashes or hangs makes its calls fail (`MCP_SERVER_LOST`, `TIMEOUT`) and is
 *   restarted with backoff (connection.ts); a call while it restarts waits up to `connectTimeoutMs`.
 * - `notifications/tools/list_changed` re-lists the tools and swaps the registrations in one step;
 *   a call that caused a change returns after the new list is registered, so the next request
 *   offers it.
 * - A reload with a new config keeps the servers whose config is unchanged running (same process,
 *   same session), starts the new ones and stops those that left (registry.ts).
 *
 * Load-time: setup waits for each server's first start attempt (its tools listed, at most its
 * `connectTimeoutMs`); a server not up by then is reported (`MCP_SERVER_UNAVAILABLE`), is retried with
 * backoff, and its tools appear when it comes up.
 */
import { definePlugin } from '../../runtime/index.ts';
import { mcpConfig } from './config.ts';
import { acquireConnection } from './registry.ts';
import { ToolSet } from './tools.ts';

export { mcpConfig, serverConfig, stdioServerConfig, httpServerConfig, restartConfig, type McpConfig, type McpServerConfig, type RestartConfig } from './config.ts';
export { McpConnection, type ConnectionEvent, type ConnectionState } from './connection.ts';
export { acquireConnection, heldConnections, configHash, type ConnectionLease } from './registry.ts';
export { harnessToolName, toolPermission, toToolOutput, passThroughSchema, mcpToolDefinition, ToolSet } from './tools.ts';

export default definePlugin({
  name: 'mcp',
  config: mcpConfig,
  async setup(ctx, config) {
    const pending: Promise<void>[] = [];
    for (const server of config.servers) {
      const lease = acquireConnection(server, config.restart);
      ctx.onDispose(() => lease.release());
      const connection = lease.connection;
      const tools = new ToolSet(ctx, connection);
      ctx.onDispose(() => tools.dispose());
      ctx.onDispose(
        connection.subscribe((event) => {
          if (event.kind === 'tools') tools.update(event.tools);
          else if (event.kind === 'lost') {
            // One warning per outage; the failed restarts after it are only information.
            const message =
              event.attempt === 1
                ? `MCP server "${server.name}" was lost (${event.message}); restarting in ${event.restartInMs} ms.`
                : `MCP server "${server.name}": restart ${event.attempt - 1} failed (${event.message}); next try in ${event.restartInMs} ms.`;
            ctx.report({ level: event.attempt === 1 ? 'warning' : 'info', code: 'MCP_SERVER_LOST', message });
          } else if (event.restartCount > 0) {
            ctx.report({ level: 'info', code: 'MCP_SERVER_RESTARTED', message: `MCP server "${server.name}" is back (restart ${event.restartCount}, ${event.toolCount} tools).` });
          }
        }),
      );
      pending.push(
        connection.whenListed(server.connectTimeoutMs).then((listed) => {
          if (listed) tools.update(connection.tools);
          else {
            ctx.report({
              level: 'warning',
              code: 'MCP_SERVER_UNAVAILABLE',
              message: `MCP server "${server.name}" is not up (${connection.lastFailure || `no tools listed within ${server.connectTimeoutMs} ms`}); it is retried with backoff and its tools appear once it is up.`,
            });
          }
        }),
      );
    }
    await Promise.all(pending);
  },
});
