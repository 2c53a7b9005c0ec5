/**
 * Tools (seed 000 "内层工具契约", seed 003 "Tool 的共同接口" / "登记集合").
 *
 * "Loose tools, tight frame": a tool only produces output; framing, timeout, truncation, error
 * conversion and the result protocol are the runtime's (see closeout.ts). `ctx.tools` is seed 003's
 * `ReadonlyCatalog` plus `register`, whose registration is an effect of the calling plugin.
 */
import type { z } from 'zod';
import type { Disposer } from '../kernel/bus.ts';
import { HarnessError } from '../kernel/errors.ts';
import type { Scope } from '../kernel/fiber.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import { isSchemaAdapter, zodSchema, type SchemaAdapter } from '../kernel/schema.ts';
import type { ImageBlock, LlmCallConfig, TextBlock, ToolSpec } from '../llm/types.ts';
import type { ForwardedEvent } from '../session/events.ts';
import type { ApproveFn } from './approval.ts';
import type { SessionHandle } from './handle.ts';

/** What a tool body receives besides its parsed input. */
export interface ToolContext {
  /** Aborted on user abort or timeout: stop, and kill what you started. `signal.reason` says which. */
  readonly signal: AbortSignal;
  readonly callId: string;
  readonly sessionId: string;
  /** The workspace the session works in (absolute path). */
  readonly cwd: string;
  /** Streams a piece of partial output (shown live; the final output is what the tool returns). */
  output(text: string): void;
  /** The turn and step of the call, when run by a session's loop. */
  readonly turn?: number;
  readonly step?: number;
  /** The calling session (its header, state, and the right to journal events), when run by a session's loop. */
  readonly session?: SessionHandle;
  /** The call config of the model call that made this tool call (a child session defaults to it). */
  readonly config?: LlmCallConfig;
  /**
   * The turn's approver (seed 000 `ToolExecutionRequest.approve`): a tool that runs a child
   * session passes it on (wrapped to add its `origin` hop) so approvals are inherited. Absent: the
   * turn has none, and every call is denied.
   */
  readonly approve?: ApproveFn;
  /**
   * Passes an event of a child session on to this turn's consumer, marked with its origin: `hop`
   * (the child session id) is put before the event's own `origin`. Never journaled here (the
   * child has its own journal). Absent outside a session's loop (a test's hand-made context).
   */
  readonly forward?: (event: ForwardedEvent, hop: string) => void;
}

/** What a tool reports. A bare string is `{ content: string }`. */
export interface ToolOutput {
  readonly content: string | readonly (TextBlock | ImageBlock)[];
  /** The tool's own verdict that it failed (e.g. a non-zero exit). */
  readonly isError?: boolean;
  /** A process exit code, shown outside the output cap. */
  readonly exitCode?: number;
  /** Notes shown after the output, outside the cap. */
  readonly notes?: readonly string[];
}

/**
 * A report without `content`: the output is what the tool streamed (`context.output` or yields), which
 * the close-out keeps under the cap while counting what it cut — so a tool that streams megabytes
 * (a command's output) can still report an exit code without holding all of it in memory.
 */
export type StreamedToolOutput = Omit<ToolOutput, 'content'> & { readonly content?: undefined };

/**
 * A tool body: return the output, or be an async generator that yields partial output (strings) and
 * returns the final output (or nothing: the yielded text is the output). Returning a
 * `StreamedToolOutput` (no `content`) also means "the streamed text is the output".
 */
export type ToolExecute<Input> = (
  input: Input,
  context: ToolContext,
) => Promise<ToolOutput | StreamedToolOutput | string> | ToolOutput | StreamedToolOutput | string | AsyncGenerator<string, ToolOutput | StreamedToolOutput | string | void, void>;

/** A tool as `defineTool` returns it and `ctx.tools` holds it (seed 003 BaseTool / ExecutableTool). */
export interface ToolDefinition<Input = any> {
  /** Catalog key; equals `name`. */
  readonly id: string;
  /** What the model calls it: letters, digits, `_` and `-`. */
  readonly name: string;
  readonly description: string;
  readonly input: SchemaAdapter<Input>;
  /** `read` tools change nothing (the `read-only` approval policy allows them). */
  readonly permission: 'read' | 'write';
  /** Default 120,000 ms; 0 or less disables the timeout. */
  readonly timeoutMs?: number;
  /** Default 16,000 characters; 0 or less disables the cap. */
  readonly maxOutputChars?: number;
  readonly execute: ToolExecute<Input>;
}

export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_CHARS = 16_000;

/**
 * Declares a tool. `input` is a zod schema (the model sees its JSON Schema) or any SchemaAdapter.
 * @throws HarnessError `INVALID_TOOL` for a bad name, description, permission or input.
 */
export function defineTool<S extends z.ZodType>(tool: {
  name: string;
  description: string;
  input: S;
  permission: 'read' | 'write';
  timeoutMs?: number;
  maxOutputChars?: number;
  execute: ToolExecute<z.output<S>>;
}): ToolDefinition<z.output<S>>;
export function defineTool<Input>(tool: {
  name: string;
  description: string;
  input: SchemaAdapter<Input>;
  permission: 'read' | 'write';
  timeoutMs?: number;
  maxOutputChars?: number;
  execute: ToolExecute<Input>;
}): ToolDefinition<Input>;
export function defineTool(tool: {
  name: string;
  description: string;
  input: z.ZodType | SchemaAdapter<unknown>;
  permission: 'read' | 'write';
  timeoutMs?: number;
  maxOutputChars?: number;
  execute: ToolExecute<any>;
}): ToolDefinition {
  if (typeof tool?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) {
    throw new HarnessError('INVALID_TOOL', `A tool name must be 1-64 letters, digits, "_" or "-"; got ${JSON.stringify(tool?.name)}.`);
  }
  if (typeof tool.description !== 'string' || tool.description.trim() === '') {
    throw new HarnessError('INVALID_TOOL', `Tool "${tool.name}" needs a description: the model reads it to decide when to call the tool.`);
  }
  if (tool.permission !== 'read' && tool.permission !== 'write') {
    throw new HarnessError('INVALID_TOOL', `Tool "${tool.name}" needs permission 'read' or 'write'.`);
  }
  if (typeof tool.execute !== 'function') throw new HarnessError('INVALID_TOOL', `Tool "${tool.name}" needs an execute(input, context) function.`);
  const input = isSchemaAdapter(tool.input) ? tool.input : zodSchema(tool.input as z.ZodType);
  return Object.freeze({
    id: tool.name,
    name: tool.name,
    description: tool.description,
    input,
    permission: tool.permission,
    ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
    ...(tool.maxOutputChars === undefined ? {} : { maxOutputChars: tool.maxOutputChars }),
    execute: tool.execute,
  });
}

/** Seed 003 `ReadonlyCatalog`. */
export interface ReadonlyCatalog<Definition extends { readonly id: string }> {
  readonly definitions: readonly Readonly<Definition>[];
  ids(): readonly string[];
  values(): IterableIterator<Readonly<Definition>>;
  entries(): IterableIterator<readonly [string, Readonly<Definition>]>;
  has(id: string): boolean;
  get(id: string): Readonly<Definition> | undefined;
  /** @throws HarnessError `UNKNOWN_TOOL` naming the known tools. */
  require(id: string): Readonly<Definition>;
}

/** `ctx.tools`: the catalog, plus `register` scoped to the calling plugin. */
export interface ToolsContext extends ReadonlyCatalog<ToolDefinition> {
  /**
   * Registers a tool while the calling plugin is loaded.
   * @throws HarnessError `DUPLICATE_TOOL` when another plugin has the name.
   */
  register(tool: ToolDefinition): Disposer;
  /** What the model sees of every tool, in registration order. */
  specs(): readonly ToolSpec[];
}

declare module '../kernel/context.ts' {
  interface PluginContext {
    readonly tools: ToolsContext;
  }
}

export class ToolRegistry implements ReadonlyCatalog<ToolDefinition> {
  private readonly tools = new Map<string, { tool: ToolDefinition; owner: string }>();
  private specCache: readonly ToolSpec[] | null = null;

  get definitions(): readonly ToolDefinition[] {
    return [...this.values()];
  }
  ids(): readonly string[] {
    return [...this.tools.keys()];
  }
  *values(): IterableIterator<ToolDefinition> {
    for (const entry of this.tools.values()) yield entry.tool;
  }
  *entries(): IterableIterator<readonly [string, ToolDefinition]> {
    for (const [id, entry] of this.tools) yield [id, entry.tool] as const;
  }
  has(id: string): boolean {
    return this.tools.has(id);
  }
  get(id: string): ToolDefinition | undefined {
    return this.tools.get(id)?.tool;
  }
  require(id: string): ToolDefinition {
    const tool = this.get(id);
    if (tool === undefined) throw new HarnessError('UNKNOWN_TOOL', `No tool named "${id}". Known tools: ${this.ids().join(', ') || 'none'}.`);
    return tool;
  }
  /** Registered tools and the plugin that registered each. */
  describe(): { name: string; owner: string }[] {
    return [...this.tools.values()].map((entry) => ({ name: entry.tool.name, owner: entry.owner }));
  }
  specs(): readonly ToolSpec[] {
    this.specCache ??= deepFreeze([...this.values()].map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.input.jsonSchema })));
    return this.specCache;
  }

  contextFor(scope: Scope, owner: string): ToolsContext {
    const registry = this;
    return {
      get definitions() {
        return registry.definitions;
      },
      ids: () => registry.ids(),
      values: () => registry.values(),
      entries: () => registry.entries(),
      has: (id) => registry.has(id),
      get: (id) => registry.get(id),
      require: (id) => registry.require(id),
      specs: () => registry.specs(),
      register: (tool) => {
        if (tool === null || typeof tool !== 'object' || typeof tool.execute !== 'function' || !tool.input) {
          throw new HarnessError('INVALID_TOOL', `ctx.tools.register needs a tool made with defineTool (plugin "${owner}").`);
        }
        const validate = (phase: 'register' | 'commit') => {
          const holder = registry.tools.get(tool.name);
          if (holder === undefined || holder.tool === tool) return;
          if (phase === 'register' && holder.owner === owner) return;
          throw new HarnessError('DUPLICATE_TOOL', `Tool "${tool.name}" is already registered by plugin "${holder.owner}"; plugin "${owner}" cannot register it too.`);
        };
        return scope.register({
          validate,
          apply: () => {
            validate('commit');
            const entry = { tool, owner };
            registry.tools.set(tool.name, entry);
            registry.specCache = null;
            return () => {
              if (registry.tools.get(tool.name) === entry) {
                registry.tools.delete(tool.name);
                registry.specCache = null;
              }
            };
          },
        });
      },
    };
  }
}
