/**
 * Cookbook: importing DeepSeek Harness sessions.
 * Run: npx tsx cookbook/import-dsh.ts   (reads ../shared/fixtures/dsh-sessions, or $HARNESS_FIXTURES_DIR)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importDshSession, openSession, writeImportedSession } from '../runtime/index.ts';

const fixtures = process.env.HARNESS_FIXTURES_DIR ? resolve(process.env.HARNESS_FIXTURES_DIR) : fileURLToPath(new URL('../../shared/fixtures', import.meta.url));
export const dshSession = join(fixtures, 'dsh-sessions/acp-agent/fs-read/session.jsonl');

export async function main(file = dshSession) {
  if (!existsSync(file))
    throw new Error(
      `This example imports ${file}, which is not there; set HARNESS_FIXTURES_DIR to the shared fixtures folder (the one with dsh-sessions/), or pass a DeepSeek Harness session file to main().`,
    );
  // 1. In memory: their records → our events (seq = their record number + 1), checked against our assembler.
  const imported = await importDshSession(file);
  const types = new Map<string, number>();
  for (const event of imported.events) types.set(event.type, (types.get(event.type) ?? 0) + 1);

  // 2. As a journal of ours (what `harness import dsh <file>` does): replay, fork, resume, cassette it.
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  try {
    const written = await writeImportedSession(file, { dataDir, id: 'imported-fs-read' });
    const opened = await openSession('imported-fs-read', { dataDir });
    return {
      eventCount: imported.events.length,
      assistantChunks: types.get('assistant/chunk') ?? 0,
      dshOnlyRecords: [...types.keys()].filter((type) => type.startsWith('dsh/')),
      assemblerMismatches: imported.assemblerMismatches.length,
      importedFrom: written.header.importedFrom?.format,
      turns: opened.state.turnCount,
      lastTurn: opened.state.lastTurnEnd,
      surface: opened.state.messages.map((m) => (m.role === 'assistant' ? 'assistant' : m.source.kind)),
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    console.log(await main());
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
