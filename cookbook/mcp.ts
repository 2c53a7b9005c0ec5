/**
 * Cookbook: tools of an MCP server — the mcp plugin starts cookbook/mcp-server.ts over stdio and
 * offers its tools to the model as `glossary__define` and `glossary__add_term`.
 * Run: npx tsx cookbook/mcp.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ApprovalRequest, createHarness, messageText, type SessionEvent } from '../runtime/index.ts';

export async function main(): Promise<{ tools: string[]; asked: string[]; decisions: string[]; answer: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-mcp-'));
  const root = fileURLToPath(new URL('..', import.meta.url));
  const harness = await createHarness({
    config: {
      defaults: { provider: 'scripted', model: 'glossary' },
      plugins: [
        { module: '../plugins/llm-scripted/index.ts', config: { scripts: { glossary: './scripts/glossary.ts' } } },
        { module: '../plugins/approvals/index.ts' },
        {
          module: '../plugins/mcp/index.ts',
          config: {
            servers: [
              // Any MCP server works the same: `npx -y @modelcontextprotocol/server-filesystem <dir>`, a Python one, …
              { name: 'glossary', transport: 'stdio', command: process.execPath, args: ['--import', 'tsx', 'cookbook/mcp-server.ts'], cwd: root },
              // { name: 'search', transport: 'http', url: 'http://127.0.0.1:8080/mcp', headers: { authorization: `Bearer ${process.env.SEARCH_TOKEN}` } },
            ],
          },
        },
      ],
    },
    baseDir: fileURLToPath(new URL('.', import.meta.url)),
    dataDir,
  });
  try {
    const session = await harness.createSession({ cwd: fileURLToPath(new URL('demo-workspace', import.meta.url)) });
    const asked: string[] = [];
    // read-only: `define` (readOnlyHint: true) runs; `add_term` can change something, so the person is asked.
    const approve = harness.ctx.approvals!.create('read-only', {
      ask: (request: ApprovalRequest) => {
        asked.push(request.name);
        return true;
      },
    });
    const events: SessionEvent[] = [];
    for await (const event of session.run('What is a journal? And remember what a fiber is.', { approve })) events.push(event);
    const decisions = events.filter((e): e is SessionEvent<'approval/decided'> => e.type === 'approval/decided').map((e) => `${e.data.decision} by ${e.data.decidedBy}`);
    const answer = events.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message').at(-1)!;
    return { tools: harness.ctx.tools.ids().filter((id) => id.startsWith('glossary__')), asked, decisions, answer: messageText(answer.data.message) };
  } finally {
    await harness.dispose(); // stops the server process
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
