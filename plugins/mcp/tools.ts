/**
 * MCP tools as Harness tools: names (`<server>__<tool>`), JSON Schemas passed through, permissions,
 * the mapping of a `CallToolResult` to content blocks, and {@link ToolSet}, which keeps one server's
 * registrations in step with its tool list (a change is swapped in one synchronous step).
 */
import { createHash } from 'node:crypto';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { defineTool, HarnessError, type ImageBlock, type PluginContext, type SchemaAdapter, type TextBlock, type ToolDefinition, type ToolOutput } from '../../runtime/index.ts';
import type { McpServerConfig } from './config.ts';
import type { McpConnection } from './connection.ts';

/** What providers accept as a function name (OpenAI and Anthropic alike): 64 of `[a-zA-Z0-9_-]`. */
const MAX_NAME_CHARS = 64;

/**
 * The Harness name of an MCP tool: `<server>__<tool>`, characters providers refuse replaced by `_`,
 * and a name too long cut and given a short hash of the original (so two long names stay apart).
 */
export function harnessToolName(server: string, tool: string): string {
  const name = `${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  if (name.length <= MAX_NAME_CHARS && !/[^a-zA-Z0-9_-]/.test(tool)) return name;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_NAME_CHARS - 9)}_${hash}`;
}

/** `read` when the config says so or the server marks the tool `readOnlyHint: true`; else `write`. */
export function toolPermission(config: McpServerConfig, tool: Tool): 'read' | 'write' {
  return config.toolPermissions?.[tool.name] ?? config.permission ?? (tool.annotations?.readOnlyHint === true ? 'read' : 'write');
}

/**
 * The server's JSON Schema as the model sees it, unchanged; `parse` only checks for an object (the
 * server validates its own arguments and answers a mismatch with an error result).
 */
export function passThroughSchema(tool: Tool): SchemaAdapter<Record<string, unknown>> {
  return {
    jsonSchema: structuredClone(tool.inputSchema) as Record<string, unknown>,
    parse(input) {
      if (input === null || typeof input !== 'object' || Array.isArray(input)) {
        throw new HarnessError('INVALID_INPUT', `(input): the arguments of ${tool.name} must be a JSON object`, { issues: [{ code: 'INVALID_TYPE', message: 'expected an object', path: [] }] });
      }
      return input as Record<string, unknown>;
    },
  };
}

/**
 * A tool result as content blocks: text as text, images as images (base64), an embedded text
 * resource as its text under a `[resource <uri>]` line, an image blob as an image; what a model cannot
 * be shown (audio, other binary blobs) is a line saying what it was; `structuredContent` alone is its
 * JSON. The server's `isError` is the tool's own verdict.
 */
export function toToolOutput(result: CallToolResult): ToolOutput {
  const blocks: (TextBlock | ImageBlock)[] = [];
  for (const part of result.content ?? []) {
    switch (part.type) {
      case 'text':
        blocks.push({ type: 'text', text: part.text });
        break;
      case 'image':
        blocks.push({ type: 'image', mediaType: part.mimeType, data: part.data });
        break;
      case 'audio':
        blocks.push({ type: 'text', text: `[audio (${part.mimeType}, ${base64Bytes(part.data)} bytes), not shown]` });
        break;
      case 'resource': {
        const resource = part.resource;
        const mime = resource.mimeType ? ` (${resource.mimeType})` : '';
        if ('text' in resource && typeof resource.text === 'string') blocks.push({ type: 'text', text: `[resource ${resource.uri}${mime}]\n${resource.text}` });
        else if ('blob' in resource && typeof resource.blob === 'string' && resource.mimeType?.startsWith('image/')) blocks.push({ type: 'image', mediaType: resource.mimeType, data: resource.blob });
        else if ('blob' in resource && typeof resource.blob === 'string')
          blocks.push({ type: 'text', text: `[resource ${resource.uri}${mime}: ${base64Bytes(resource.blob)} bytes of binary data, not shown]` });
        break;
      }
      case 'resource_link':
        blocks.push({ type: 'text', text: `[resource link: ${part.name} ${part.uri}${part.mimeType ? ` (${part.mimeType})` : ''}]` });
        break;
      default:
        blocks.push({ type: 'text', text: `[a ${(part as { type: string }).type} part, not shown]` });
    }
  }
  if (blocks.length === 0 && result.structuredContent !== undefined) blocks.push({ type: 'text', text: JSON.stringify(result.structuredContent) });
  return { content: blocks, ...(result.isError === true ? { isError: true } : {}) };
}

function base64Bytes(data: string): number {
  return Math.floor((data.replace(/=+$/, '').length * 3) / 4);
}

/** A Harness tool that calls `tool` on the server behind `connection`. */
export function mcpToolDefinition(connection: McpConnection, tool: Tool): ToolDefinition<Record<string, unknown>> {
  const config = connection.config;
  return defineTool({
    name: harnessToolName(config.name, tool.name),
    description: tool.description?.trim() || tool.title?.trim() || tool.annotations?.title?.trim() || `The tool ${tool.name} of the MCP server "${config.name}".`,
    input: passThroughSchema(tool),
    permission: toolPermission(config, tool),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    ...(config.maxOutputChars === undefined ? {} : { maxOutputChars: config.maxOutputChars }),
    async execute(input, context) {
      // Progress the server reports is shown live (streamed output); the result is what it returns.
      const onProgress = (p: { progress: number; total?: number; message?: string }) =>
        context.output(`[progress ${p.progress}${p.total === undefined ? '' : `/${p.total}`}]${p.message ? ` ${p.message}` : ''}\n`);
      return toToolOutput(await connection.callTool(tool.name, input, context.signal, onProgress));
    },
  });
}

/**
 * One plugin generation's registrations of one server's tools. {@link update} swaps them for a new
 * list in one synchronous step (no request sees half a list); an unchanged tool keeps its definition.
 */
export class ToolSet {
  private readonly ctx: PluginContext;
  private readonly connection: McpConnection;
  private current = new Map<string, { key: string; dispose: () => void }>();

  constructor(ctx: PluginContext, connection: McpConnection) {
    this.ctx = ctx;
    this.connection = connection;
  }

  /** The Harness names registered now. */
  get names(): readonly string[] {
    return [...this.current.keys()];
  }

  update(tools: readonly Tool[]): void {
    if (this.ctx.signal.aborted) return;
    const config = this.connection.config;
    const wanted = new Map<string, { key: string; tool: Tool }>();
    for (const tool of tools) {
      const name = harnessToolName(config.name, tool.name);
      if (wanted.has(name)) {
        this.ctx.report({ level: 'warning', code: 'MCP_TOOL_NAME_CLASH', message: `MCP server "${config.name}": two tools map to the name ${name}; only the first is offered.` });
        continue;
      }
      wanted.set(name, { key: JSON.stringify([tool.name, tool.description, tool.title, tool.inputSchema, toolPermission(config, tool)]), tool });
    }
    const next = new Map<string, { key: string; dispose: () => void }>();
    // One synchronous section: the old definitions go and the new ones come before anything else runs.
    for (const [name, entry] of this.current) {
      if (wanted.get(name)?.key === entry.key) next.set(name, entry);
      else entry.dispose();
    }
    for (const [name, { key, tool }] of wanted) {
      if (next.has(name)) continue;
      try {
        next.set(name, { key, dispose: this.ctx.tools.register(mcpToolDefinition(this.connection, tool)) });
      } catch (error) {
        this.ctx.report({
          level: 'warning',
          code: HarnessError.is(error) ? error.code : 'MCP_TOOL_REFUSED',
          message: `MCP server "${config.name}": tool ${name} not offered: ${(error as Error).message}`,
        });
      }
    }
    this.current = next;
  }

  dispose(): void {
    for (const entry of this.current.values()) entry.dispose();
    this.current.clear();
  }
}
