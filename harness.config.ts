/**
 * The product's harness config: which plugins load, in order, with their config.
 *
 * It loads offline with no API key: the default model is `scripted` (plugins/llm-scripted, a
 * deterministic demo model), and the real providers are registered but only read their key
 * (`OPENAI_API_KEY`, `DEEPSEEK_API_KEY`, `ANTHROPIC_API_KEY`) when a call is made — a missing key is
 * then a one-line `AUTH` error naming the variable.
 *
 * Base URLs can be pointed elsewhere (a proxy, a gateway, a test's fixture server) with
 * `OPENAI_BASE_URL`, `DEEPSEEK_BASE_URL` and `ANTHROPIC_BASE_URL`. Module paths resolve from this file's
 * folder; the data directory is `$HARNESS_HOME` (default `~/.harness`) unless `harness --data-dir` says
 * otherwise, or a `dataDir` is set here (it wins over `$HARNESS_HOME`, `--data-dir` wins over it).
 */
import { defineConfig } from './runtime/index.ts';

/** Only set keys whose value is given, so the plugin's built-in route settings stay in force. */
const baseURL = (variable: string): { baseURL?: string } => {
  const value = process.env[variable];
  return value ? { baseURL: value } : {};
};

export default defineConfig({
  defaults: {
    provider: 'scripted',
    model: 'scripted-default',
    system: [
      'You are a careful coding agent working in the user\'s workspace through the tools you are given.',
      'Look before you act: list and read files before changing them, and keep changes small.',
      'Answer briefly and concretely; say what you did and what you found.',
    ].join(' '),
  },
  plugins: [
    // Models. `scripted` is the offline default; `--provider openai|deepseek|anthropic` picks a real one.
    { module: './plugins/llm-scripted/index.ts', config: { paceMs: 12 } },
    {
      module: './plugins/llm-openai/index.ts',
      config: {
        providers: {
          openai: { ...baseURL('OPENAI_BASE_URL') },
          deepseek: { ...baseURL('DEEPSEEK_BASE_URL') },
        },
      },
    },
    { module: './plugins/llm-anthropic/index.ts', config: { providers: { anthropic: { ...baseURL('ANTHROPIC_BASE_URL') } } } },
    // The one retry layer (exponential backoff; AUTH and ABORTED are never retried).
    { module: './plugins/llm-retry/index.ts', config: { maxRetries: 3 } },
    // Usage and cost: USD per million tokens, per class (reasoning is priced as output).
    {
      module: './plugins/token-meter/index.ts',
      config: {
        prices: {
          openai: {
            'gpt-5.5': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
            'gpt-5.4': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
            'gpt-5.4-mini': { inputTokens: 0.25, cacheReadTokens: 0.025, outputTokens: 2 },
            'gpt-5.1': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
            'gpt-5': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
            'gpt-5-mini': { inputTokens: 0.25, cacheReadTokens: 0.025, outputTokens: 2 },
            'gpt-4.1': { inputTokens: 2, cacheReadTokens: 0.5, outputTokens: 8 },
            'gpt-4o': { inputTokens: 2.5, cacheReadTokens: 1.25, outputTokens: 10 },
          },
          deepseek: {
            'deepseek-chat': { inputTokens: 0.27, cacheReadTokens: 0.07, outputTokens: 1.1 },
            'deepseek-reasoner': { inputTokens: 0.55, cacheReadTokens: 0.14, outputTokens: 2.19 },
          },
          anthropic: {
            'claude-opus-5-5': { inputTokens: 15, cacheReadTokens: 1.5, cacheWriteTokens: 18.75, outputTokens: 75 },
            'claude-sonnet-5-5': { inputTokens: 3, cacheReadTokens: 0.3, cacheWriteTokens: 3.75, outputTokens: 15 },
            'claude-haiku-5-5': { inputTokens: 1, cacheReadTokens: 0.1, cacheWriteTokens: 1.25, outputTokens: 5 },
            'claude-haiku-4-5': { inputTokens: 1, cacheReadTokens: 0.1, cacheWriteTokens: 1.25, outputTokens: 5 },
          },
          // The scripted model is free; pricing it at 0 makes the footer say so.
          scripted: { '*': { inputTokens: 0, outputTokens: 0 } },
        },
      },
    },
    // Summarises older turns when the context fills up.
    { module: './plugins/compaction/index.ts', config: { reserveTokens: 16_000, keepTurns: 2 } },
    // read_file, write_file, edit_file, list_dir, grep: confined to the session's workspace (--cwd; `..` and
    // symlinks that lead out are refused). exec_command runs `bash -c` IN the workspace directory, but a shell
    // can reach anything the user can — it is not confined; the approval policy is what guards it.
    { module: './plugins/tools-workspace/index.ts', config: {} },
    // `harness run --approve <policy>`: allow-all, read-only (the default), always-ask, deny-all.
    { module: './plugins/approvals/index.ts', config: { default: 'read-only' } },
  ],
});
