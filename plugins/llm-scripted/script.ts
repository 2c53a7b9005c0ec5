/**
 * Scripts for the scripted model: what it answers, decided from the conversation alone (so a run is
 * deterministic and a journal replays exactly).
 *
 * A script is either a function `(context) => ScriptReply` (TS) or a JSON rule list:
 * ```json
 * { "replies": [
 *   { "when": { "step": 1 }, "reply": { "reasoning": "…", "toolCalls": [{ "name": "list_dir", "arguments": { "path": "." } }] } },
 *   { "when": { "userIncludes": "hello" }, "reply": { "text": "Hello!" } },
 *   { "reply": { "text": "I have nothing scripted for that." } }
 * ] }
 * ```
 * The first rule whose `when` matches wins. `step` is 1 + the number of model replies since the
 * latest user prompt; `turn` is the number of user prompts so far.
 */
import { z, type Message, type TokenUsage, type ToolSpec } from '../../runtime/index.ts';

export interface ScriptToolCall {
  readonly name: string;
  /** An object (serialised as JSON) or a raw JSON string. */
  readonly arguments?: Record<string, unknown> | string;
  readonly id?: string;
}

/** One scripted reply. Finish defaults to `tool-calls` when there are tool calls, else `stop`. */
export interface ScriptReply {
  readonly reasoning?: string;
  readonly text?: string;
  readonly toolCalls?: readonly ScriptToolCall[];
  readonly finish?: 'stop' | 'tool-calls' | 'max-tokens';
  /** Reported usage; estimated (characters / 4) when absent. */
  readonly usage?: TokenUsage;
  /** Fail the call with this code (e.g. `SERVER`, `RATE_LIMIT`) — for testing retries. */
  readonly error?: { readonly code: string; readonly message: string; readonly providerRetryAfterMs?: number };
}

/** What a script sees of a request. */
export interface ScriptContext {
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
  readonly system?: string;
  /** The text of the latest user prompt (`source.kind === 'user'`). */
  readonly prompt: string;
  /** Number of user prompts so far. */
  readonly turn: number;
  /** 1 + model replies since the latest user prompt. */
  readonly step: number;
  /** Tool results since the latest user prompt, in order, with the call that asked for them. */
  readonly toolResults: readonly { readonly name: string; readonly arguments: string; readonly text: string; readonly isError: boolean }[];
  readonly model: string;
  readonly purpose?: string;
  hasTool(name: string): boolean;
}

export type ScriptFunction = (context: ScriptContext) => ScriptReply;

const replySchema = z.strictObject({
  reasoning: z.string().optional(),
  text: z.string().optional(),
  toolCalls: z.array(z.strictObject({ name: z.string().min(1), arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(), id: z.string().optional() })).optional(),
  finish: z.enum(['stop', 'tool-calls', 'max-tokens']).optional(),
  usage: z
    .strictObject({
      inputTokens: z.number().int().nonnegative().optional(),
      outputTokens: z.number().int().nonnegative().optional(),
      cacheReadTokens: z.number().int().nonnegative().optional(),
      cacheWriteTokens: z.number().int().nonnegative().optional(),
      reasoningTokens: z.number().int().nonnegative().optional(),
    })
    .optional(),
  error: z.strictObject({ code: z.string().regex(/^[A-Z][A-Z0-9_]*$/), message: z.string(), providerRetryAfterMs: z.number().nonnegative().optional() }).optional(),
});

/** The JSON script format. */
export const jsonScriptSchema = z.strictObject({
  replies: z.array(
    z.strictObject({
      when: z
        .strictObject({ step: z.number().int().positive().optional(), turn: z.number().int().positive().optional(), userIncludes: z.string().optional(), purpose: z.string().optional() })
        .optional(),
      /** One reply, or a list answered in order across matching calls of a turn's steps. */
      reply: replySchema,
    }),
  ),
});
export type JsonScript = z.infer<typeof jsonScriptSchema>;

/** Turns a JSON script into a script function. */
export function compileJsonScript(script: JsonScript): ScriptFunction {
  return (context) => {
    for (const rule of script.replies) {
      const when = rule.when ?? {};
      if (when.step !== undefined && when.step !== context.step) continue;
      if (when.turn !== undefined && when.turn !== context.turn) continue;
      if (when.purpose !== undefined && when.purpose !== (context.purpose ?? 'agent')) continue;
      if (when.userIncludes !== undefined && !context.prompt.toLowerCase().includes(when.userIncludes.toLowerCase())) continue;
      return rule.reply as ScriptReply;
    }
    return { text: `The scripted model has no reply for step ${context.step} of turn ${context.turn}: add a rule to its script.` };
  };
}

/** Builds the context a script sees from a request's messages. */
export function scriptContext(messages: readonly Message[], tools: readonly ToolSpec[], extra: { system?: string; model: string; purpose?: string }): ScriptContext {
  let lastPrompt = -1;
  let turn = 0;
  messages.forEach((message, index) => {
    if (message.role === 'user' && message.source.kind === 'user') {
      lastPrompt = index;
      turn++;
    }
  });
  const calls = new Map<string, { name: string; arguments: string }>();
  const toolResults: { name: string; arguments: string; text: string; isError: boolean }[] = [];
  let replies = 0;
  for (let i = lastPrompt + 1; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'assistant') replies++;
    for (const block of message.content) {
      if (block.type === 'tool-call') calls.set(block.id, { name: block.name, arguments: block.arguments });
      if (block.type === 'tool-result') {
        const call = calls.get(block.toolCallId) ?? { name: 'unknown', arguments: '{}' };
        const text = block.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
        toolResults.push({ ...call, text, isError: block.isError });
      }
    }
  }
  const promptMessage = lastPrompt >= 0 ? messages[lastPrompt]! : undefined;
  const prompt = promptMessage ? promptMessage.content.map((block) => (block.type === 'text' ? block.text : '')).join('') : '';
  const names = new Set(tools.map((tool) => tool.name));
  return {
    messages,
    tools,
    ...(extra.system === undefined ? {} : { system: extra.system }),
    prompt,
    turn,
    step: replies + 1,
    toolResults,
    model: extra.model,
    ...(extra.purpose === undefined ? {} : { purpose: extra.purpose }),
    hasTool: (name) => names.has(name),
  };
}
