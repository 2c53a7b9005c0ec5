/** The demo MCP server over stdio (run: node --import tsx test/mcp/servers/stdio-server.ts). */
import { appendFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { buildDemoServer } from './demo-server.ts';

if (process.env.MCP_STATE_FILE) appendFileSync(process.env.MCP_STATE_FILE, `started ${process.pid}\n`);
await buildDemoServer('stdio').connect(new StdioServerTransport());
