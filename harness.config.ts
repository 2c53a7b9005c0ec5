/**
 * The product's harness config: the built-in stack (`stack/index.ts`, `harness-runtime/stack` when
 * installed) with the scripted model as the default — the same config the `harness` command uses
 * when it finds none.
 *
 * It loads offline with no API key: the default model is `scripted/scripted-default`
 * (plugins/llm-scripted, a deterministic demo model), and the real providers are registered but only
 * read their key (`OPENAI_API_KEY`, `DEEPSEEK_API_KEY`, `ANTHROPIC_API_KEY`) when a call is made — a
 * missing key is then a one-line `AUTH` error naming the variable. Base URLs follow
 * `OPENAI_BASE_URL`, `DEEPSEEK_BASE_URL` and `ANTHROPIC_BASE_URL`. The data directory is
 * `$HARNESS_HOME` (default `~/.harness`) unless `harness --data-dir` says otherwise, or a `dataDir`
 * is set here (it wins over `$HARNESS_HOME`, `--data-dir` wins over it).
 *
 * The stack is: llm-scripted, llm-openai (openai, deepseek), llm-anthropic, llm-retry (3 retries),
 * token-meter (with prices), compaction, tools-workspace (confined file tools; `exec_command` runs
 * `bash -c` in the workspace and is not confined — the approval policy guards it), approvals
 * (`--approve`, default `read-only`), journal-postgres (`--store postgres://…`). Change one with `defaultPlugins({ <plugin>: { … } })`, leave one
 * out with `false`.
 */
import { defineConfig } from './runtime/index.ts';
import { DEFAULT_DEFAULTS, defaultPlugins } from './stack/index.ts';

export default defineConfig({
  defaults: DEFAULT_DEFAULTS,
  plugins: defaultPlugins(),
});
