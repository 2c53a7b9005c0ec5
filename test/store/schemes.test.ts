/**
 * Store-scheme registration (runtime/session/store.ts registerJournalStore): registrations of one
 * owner stack — a hot-reloaded journal-postgres hands over with no gap — while a second, different
 * plugin claiming a scheme already taken is refused with DUPLICATE_STORE naming the holder.
 */
import { describe, expect, it } from 'vitest';
import { createHarness, definePlugin, FileJournalStore, HarnessError, registerJournalStore } from '../../runtime/index.ts';
import { registeredStoreSchemes } from '../../runtime/internal.ts';
import { plugin, tempDir } from '../agent/support.ts';

const factory = () => new FileJournalStore({ dataDir: tempDir('harness-schemes-') });

describe('registerJournalStore', () => {
  it('stacks registrations of one owner (the newest serves) and refuses another owner with DUPLICATE_STORE', () => {
    const first = registerJournalStore('x-test', factory, 'store-a');
    const second = registerJournalStore('x-test', factory, 'store-a');
    let refused: unknown;
    try {
      registerJournalStore('x-test', factory, 'store-b');
    } catch (error) {
      refused = error;
    }
    expect(HarnessError.is(refused) && refused.code).toBe('DUPLICATE_STORE');
    expect((refused as Error).message).toContain('"store-a"');
    expect((refused as HarnessError).failure).toMatchObject({ scheme: 'x-test', owner: 'store-a', by: 'store-b' });
    second();
    expect(registeredStoreSchemes()).toContain('x-test');
    first();
    expect(registeredStoreSchemes()).not.toContain('x-test');
    // Once the holder is gone, another owner may take the scheme.
    registerJournalStore('x-test', factory, 'store-b')();
  });

  it('journal-postgres reloads without DUPLICATE_STORE; another plugin claiming postgres: fails to load and changes nothing', async () => {
    const harness = await createHarness({ dataDir: tempDir('harness-schemes-'), config: { plugins: [{ module: plugin('journal-postgres') }] } });
    try {
      await harness.host.reload('journal-postgres');
      expect(registeredStoreSchemes().filter((s) => s.startsWith('postgres'))).toEqual(['postgres', 'postgresql']);
      const impostor = definePlugin({
        name: 'other-postgres',
        setup(ctx) {
          ctx.onDispose(registerJournalStore('postgres', factory, ctx.plugin.name));
        },
      });
      const failure = await harness.host.load({ plugin: impostor }).then(
        () => undefined,
        (error: unknown) => error,
      );
      const codes: string[] = [];
      for (let e = failure as { code?: string; cause?: unknown } | undefined; e !== undefined && e !== null; e = e.cause as typeof e) if (e.code) codes.push(e.code);
      expect(codes).toContain('DUPLICATE_STORE');
      expect(harness.host.list().map((p) => p.name)).toEqual(['journal-postgres']);
      expect(registeredStoreSchemes().filter((s) => s.startsWith('postgres'))).toEqual(['postgres', 'postgresql']);
    } finally {
      await harness.dispose();
    }
    expect(registeredStoreSchemes().filter((s) => s.startsWith('postgres'))).toEqual([]);
  });
});
