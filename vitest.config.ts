import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'cookbook/**/*.test.ts'],
    // One PostgreSQL cluster per run, started on first use (test/support/postgres.ts).
    globalSetup: ['test/support/postgres-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    execArgv: ['--import', 'tsx'],
    server: { deps: { external: [/\/runtime\//, /\/cli\//, /\/plugins\//, /\/testing\//, /\/stack\//, /\/test\/\.tmp-/] } },
  },
});
