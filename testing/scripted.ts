/**
 * The scripted model for a plugin author's tests: `plugins/llm-scripted`'s adapter serving scripts
 * given inline (a function or a JSON rule list), no files, no key, deterministic.
 */
import { definePlugin, HarnessError, type PluginSpec } from '../runtime/index.ts';
import { compileJsonScript, jsonScriptSchema, ScriptedAdapter, type JsonScript, type ScriptFunction, type ScriptReply } from '../plugins/llm-scripted/index.ts';

/**
 * What a scripted model answers: a function of the conversation (`(context) => reply`), a JSON rule
 * list (`{ replies: [{ when?, reply }] }`, see plugins/llm-scripted/script.ts), or a list of replies
 * given in order, one per model call of a turn (step 1, 2, …; the last one repeats).
 */
export type TestScript = ScriptFunction | JsonScript | readonly ScriptReply[];

export interface ScriptedModelOptions {
  /** Provider id of the routes. Default `scripted`. */
  readonly provider?: string;
  /** Model id the script is served as. Default `test`. */
  readonly model?: string;
  /** Delay between streamed chunks, ms. Default 0. */
  readonly paceMs?: number;
  /** Characters per streamed fragment. Default 12. */
  readonly fragmentChars?: number;
  /** Context window the model reports, tokens. Default 128000. */
  readonly contextWindow?: number;
}

/** A script as the adapter's function. @throws HarnessError `INVALID_SCRIPT` for a malformed JSON script. */
export function compileTestScript(script: TestScript): ScriptFunction {
  if (typeof script === 'function') return script;
  if (Array.isArray(script)) {
    const replies = script as readonly ScriptReply[];
    if (replies.length === 0) throw new HarnessError('INVALID_SCRIPT', 'A reply list needs at least one reply.');
    return (context) => replies[Math.min(context.step, replies.length) - 1]!;
  }
  const parsed = jsonScriptSchema.safeParse(script);
  if (!parsed.success) {
    throw new HarnessError('INVALID_SCRIPT', `Invalid JSON script: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(script)'}: ${issue.message}`).join('; ')}`);
  }
  return compileJsonScript(parsed.data);
}

/**
 * A plugin entry for a config's `plugins` (or `createHarness({ config })`) that registers the
 * scripted model: `script` served as `<provider>/<model>` (default `scripted/test`). Its plugin is
 * named `llm-scripted`, so it takes the place of the shipped one in a stack.
 * @throws HarnessError `INVALID_SCRIPT`.
 */
export function scriptedModel(script: TestScript, options: ScriptedModelOptions = {}): PluginSpec {
  const compiled = compileTestScript(script);
  const provider = options.provider ?? 'scripted';
  const model = options.model ?? 'test';
  return {
    plugin: definePlugin({
      name: 'llm-scripted',
      setup(ctx) {
        ctx.llm.registerAdapter(
          [provider],
          new ScriptedAdapter({ scripts: new Map([[model, compiled]]), paceMs: options.paceMs ?? 0, fragmentChars: options.fragmentChars ?? 12, contextWindow: options.contextWindow ?? 128_000 }),
        );
      },
    }),
  };
}
