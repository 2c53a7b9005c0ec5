/**
 * The mcp plugin's config: the servers to connect to, validated with zod.
 *
 * ```ts
 * { module: 'harness-runtime/plugins/mcp', config: { servers: [
 *   { name: 'files', transport: 'stdio', command: 'node', args: ['server.js'], env: { ROOT: '/srv' }, cwd: '/srv' },
 *   { name: 'search', transport: 'http', url: 'http://127.0.0.1:8080/mcp', headers: { authorization: 'Bearer …' } },
 * ] } }
 * ```
 * Every server may also set `permission` (all its tools), `toolPermissions` (per MCP tool name),
 * `timeoutMs` and `maxOutputChars` (the close-out's, per call), `connectTimeoutMs`.
 */
import { z } from '../../runtime/index.ts';

/** Server names prefix tool names (`<server>__<tool>`), so they keep to what providers accept. */
export const SERVER_NAME = /^[a-zA-Z0-9_-]{1,32}$/;

const permission = z.enum(['read', 'write']);

const common = {
  name: z.string().regex(SERVER_NAME, 'a server name is 1-32 letters, digits, "_" or "-" (it prefixes the tool names: <server>__<tool>)'),
  /** Every tool of the server gets this permission (else: `read` when the tool says `readOnlyHint: true`, else `write`). */
  permission: permission.optional(),
  /** Permission per MCP tool name; wins over `permission` and the annotations. */
  toolPermissions: z.record(z.string(), permission).optional(),
  /** The close-out's timeout per call, ms (default: the runtime's, 120,000; 0 or less: none). */
  timeoutMs: z.number().optional(),
  /** The close-out's output cap per call, characters (default: the runtime's, 16,000). */
  maxOutputChars: z.number().int().optional(),
  /** How long to wait for the server to start and list its tools, ms (at load, and for a call while it restarts). */
  connectTimeoutMs: z.number().int().positive().default(10_000),
};

export const stdioServerConfig = z.strictObject({
  ...common,
  transport: z.literal('stdio'),
  /** The executable (found on PATH), e.g. `node` or `npx`. */
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Added to the SDK's safe default environment (HOME, PATH, …), not to the whole of ours. */
  env: z.record(z.string(), z.string()).optional(),
  /** Working directory of the server process (default: the harness's). */
  cwd: z.string().min(1).optional(),
});

export const httpServerConfig = z.strictObject({
  ...common,
  transport: z.literal('http'),
  /** The Streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`. */
  url: z.url({ protocol: /^https?$/ }),
  /** Sent with every request (e.g. `authorization`); never printed. */
  headers: z.record(z.string(), z.string()).optional(),
});

export const serverConfig = z.discriminatedUnion('transport', [stdioServerConfig, httpServerConfig]);

export const restartConfig = z.strictObject({
  /** The first restart's delay after a crash, ms; doubled per failed attempt. */
  initialDelayMs: z.number().int().nonnegative().default(250),
  maxDelayMs: z.number().int().positive().default(30_000),
  /** How long a health check (`ping`) after a failed or timed-out call may take before the server counts as hung, ms. */
  pingTimeoutMs: z.number().int().positive().default(5_000),
});

export const mcpConfig = z
  .strictObject({
    servers: z.array(serverConfig).default([]),
    restart: restartConfig.default({ initialDelayMs: 250, maxDelayMs: 30_000, pingTimeoutMs: 5_000 }),
  })
  .superRefine((config, issues) => {
    const seen = new Set<string>();
    config.servers.forEach((server, index) => {
      if (seen.has(server.name)) issues.addIssue({ code: 'custom', path: ['servers', index, 'name'], message: `two servers are named "${server.name}": give each a name of its own` });
      seen.add(server.name);
    });
  })
  .default({ servers: [], restart: { initialDelayMs: 250, maxDelayMs: 30_000, pingTimeoutMs: 5_000 } });

export type McpConfig = z.output<typeof mcpConfig>;
export type McpServerConfig = z.output<typeof serverConfig>;
export type RestartConfig = z.output<typeof restartConfig>;
