/**
 * Cookbook: a small MCP server for mcp.ts — a glossary, over stdio, built with the official SDK's
 * `McpServer`. Run by the mcp plugin as `node --import tsx cookbook/mcp-server.ts`.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const terms = new Map([
  ['journal', 'the append-only list of events a session is; its state is a fold over them'],
  ['cassette', 'a journal re-run offline as a test, the model replaced by the recording'],
]);

const server = new McpServer({ name: 'glossary', version: '1.0.0' });
server.registerTool('define', { description: 'Looks a term up in the glossary.', inputSchema: { term: z.string() }, annotations: { readOnlyHint: true } }, async ({ term }) => {
  const definition = terms.get(term.toLowerCase());
  return definition === undefined ? { content: [{ type: 'text', text: `"${term}" is not in the glossary.` }], isError: true } : { content: [{ type: 'text', text: `${term}: ${definition}` }] };
});
server.registerTool(
  'add_term',
  { description: 'Adds a term to the glossary.', inputSchema: { term: z.string(), definition: z.string() }, annotations: { readOnlyHint: false } },
  async ({ term, definition }) => {
    terms.set(term.toLowerCase(), definition);
    return { content: [{ type: 'text', text: `added "${term}" (${terms.size} terms)` }] };
  },
);
await server.connect(new StdioServerTransport());
