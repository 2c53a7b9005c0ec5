/**
 * The demo MCP server over Streamable HTTP on 127.0.0.1 (run: node --import tsx
 * test/mcp/servers/http-server.ts [port]). Stateful: one McpServer per MCP session. Prints
 * `{"port":N}` on stdout once listening; appends `session <id>` to `$MCP_STATE_FILE` per new MCP session.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { buildDemoServer } from './demo-server.ts';

const transports = new Map<string, StreamableHTTPServerTransport>();

const http = createServer(async (req, res) => {
  if (req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  if (process.env.MCP_REQUIRE_TOKEN && req.headers.authorization !== `Bearer ${process.env.MCP_REQUIRE_TOKEN}`) {
    res.writeHead(401).end();
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
  const sessionId = req.headers['mcp-session-id'];
  let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
  if (transport === undefined) {
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      res
        .writeHead(typeof sessionId === 'string' ? 404 : 400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null }));
      return;
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, created);
        if (process.env.MCP_STATE_FILE) appendFileSync(process.env.MCP_STATE_FILE, `session ${id}\n`);
      },
    });
    created.onclose = () => {
      if (created.sessionId) transports.delete(created.sessionId);
    };
    await buildDemoServer('http').connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
});

http.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = http.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, pid: process.pid })}\n`);
});
