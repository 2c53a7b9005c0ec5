/**
 * Config building blocks for adapters that serve configured routes (the adapter kit's config half):
 * the zod shape of a model catalog entry and of a route's common fields, the catalog checks, and the
 * resolution of a route's common fields with their defaults. An adapter adds its own fields
 * (e.g. `api`, `compat`, `thinking`) next to these.
 *
 * Units: `idleTimeoutMs` in ms; `contextWindow` / `maxOutputTokens` in tokens.
 */
import { z } from 'zod';
import type { AdapterDefaults } from './adapter.ts';
import type { ModelInfo } from './types.ts';

/** A call with no stream event for this long fails with `TIMEOUT` (ms). */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

/** The fields of `ModelInfo` a catalog entry may give. */
const modelFields = {
  id: z.string().min(1, 'a model needs a non-empty id'),
  label: z.string().optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  reasoningEfforts: z.array(z.string().min(1)).optional(),
  defaultReasoningEffort: z.string().min(1).optional(),
  inputModalities: z.array(z.enum(['text', 'image', 'file'])).optional(),
};

/**
 * The schema of one model catalog entry: `ModelInfo`'s fields plus `extra` (an adapter's own); unknown
 * keys are rejected; `defaultReasoningEffort` must be one of `reasoningEfforts`.
 */
export function modelEntrySchema<Extra extends z.ZodRawShape = Record<never, never>>(extra?: Extra) {
  return z.strictObject({ ...modelFields, ...(extra ?? ({} as Extra)) }).refine((model) => effortListed(model as { defaultReasoningEffort?: string; reasoningEfforts?: string[] }), {
    message: "defaultReasoningEffort must be one of the model's reasoningEfforts",
    path: ['defaultReasoningEffort'],
  });
}

function effortListed(model: { defaultReasoningEffort?: string; reasoningEfforts?: string[] }): boolean {
  return model.defaultReasoningEffort === undefined || (model.reasoningEfforts ?? []).includes(model.defaultReasoningEffort);
}

/** Extra HTTP headers: names are HTTP tokens, values single-line. */
export const httpHeadersSchema = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: `header name "${name}" is not an HTTP token (letters, digits, -)` });
    if (/[\r\n]/.test(value)) ctx.addIssue({ code: 'custom', path: [name], message: 'header values cannot contain line breaks' });
  }
});

/** How an adapter's routes differ in their common fields. */
export interface RouteFieldsOptions<Model extends z.ZodType> {
  /** A catalog entry's schema (see {@link modelEntrySchema}). */
  readonly model: Model;
  /** An example base URL for the error message, e.g. `https://api.openai.com/v1`. */
  readonly baseURLExample: string;
  /** An example key variable for the error message, e.g. `OPENAI_API_KEY`. */
  readonly apiKeyEnvExample: string;
  /** The provider's temperature ceiling (OpenAI 2, Anthropic 1). */
  readonly maxTemperature: number;
}

/**
 * The zod shape of a route's common fields — `label`, `baseURL`, `apiKeyEnv`, `idleTimeoutMs` (ms),
 * `headers`, `allowUnknownModels`, `defaults` (temperature, maxTokens, reasoningEffort) and
 * `models` — to spread into an adapter's own strict route object.
 */
export function routeFields<Model extends z.ZodType>(options: RouteFieldsOptions<Model>) {
  return {
    label: z.string().optional(),
    baseURL: z.url({ message: `baseURL must be an absolute URL, e.g. ${options.baseURLExample}` }).optional(),
    // false: a keyless server (a local one): no key is read or sent.
    apiKeyEnv: z
      .union([
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, `apiKeyEnv must be an environment variable name, e.g. ${options.apiKeyEnvExample}, or false for a server that takes no key`),
        z.literal(false),
      ])
      .optional(),
    idleTimeoutMs: z.number().int().positive().optional(),
    headers: httpHeadersSchema.optional(),
    allowUnknownModels: z.boolean().optional(),
    defaults: z
      .strictObject({
        temperature: z.number().min(0).max(options.maxTemperature).optional(),
        maxTokens: z.number().int().positive().optional(),
        reasoningEffort: z.string().min(1).optional(),
      })
      .optional(),
    models: z.array(options.model).optional(),
  };
}

/**
 * Checks a route's catalog inside a `superRefine`: a route needs models unless it allows unknown
 * ones, and no model id is listed twice. Issues are added under `path`.
 */
export function checkCatalog(ctx: z.RefinementCtx, path: readonly (string | number)[], provider: string, models: readonly { readonly id: string }[], allowUnknownModels: boolean | undefined): void {
  if (models.length === 0 && allowUnknownModels !== true) {
    ctx.addIssue({ code: 'custom', path: [...path, 'models'], message: `provider "${provider}" lists no models: add { id } entries to models, or set allowUnknownModels: true` });
  }
  const seen = new Set<string>();
  models.forEach((model, index) => {
    if (seen.has(model.id)) ctx.addIssue({ code: 'custom', path: [...path, 'models', index, 'id'], message: `model "${model.id}" is listed twice` });
    seen.add(model.id);
  });
}

/** The common route fields as a config gives them (after `routeFields` validation). */
export interface RouteFieldsConfig {
  readonly label?: string;
  readonly baseURL?: string;
  readonly apiKeyEnv?: string | false;
  readonly idleTimeoutMs?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly allowUnknownModels?: boolean;
  readonly defaults?: AdapterDefaults;
  readonly models?: readonly object[];
}

/** A route's common fields with every default applied, frozen (its models too). */
export interface ResolvedRouteFields<Model extends ModelInfo> {
  readonly provider: string;
  readonly label: string;
  readonly baseURL: string;
  /** The variable holding the key; false for a keyless server. */
  readonly apiKeyEnv: string | false;
  /** ms */
  readonly idleTimeoutMs: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly allowUnknownModels: boolean;
  readonly defaults?: AdapterDefaults;
  readonly models: readonly Model[];
  readonly modelsById: ReadonlyMap<string, Model>;
}

/**
 * Applies the defaults of a route's common fields: `label` = the id, `apiKeyEnv` = `<ID>_API_KEY`
 * (upper-cased, other characters → `_`), `idleTimeoutMs` = 120000; models frozen and indexed by id.
 * `baseURL` must be set (the schema's refinement or a built-in route guarantees it).
 */
export function resolveRouteFields<Model extends ModelInfo>(provider: string, route: RouteFieldsConfig): ResolvedRouteFields<Model> {
  const models = (route.models ?? []).map((model) => freezeModel(model) as Model);
  return {
    provider,
    label: route.label ?? provider,
    baseURL: route.baseURL!,
    apiKeyEnv: route.apiKeyEnv ?? `${provider.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}_API_KEY`,
    idleTimeoutMs: route.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    ...(route.headers ? { headers: Object.freeze({ ...route.headers }) } : {}),
    allowUnknownModels: route.allowUnknownModels ?? false,
    ...(route.defaults ? { defaults: Object.freeze({ ...route.defaults }) } : {}),
    models: Object.freeze(models),
    modelsById: new Map(models.map((model) => [model.id, model])),
  };
}

/** A catalog entry without its undefined fields, frozen one level down (arrays and records). */
function freezeModel(model: object): ModelInfo {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(model)) {
    if (value === undefined) continue;
    out[key] = Array.isArray(value) ? Object.freeze([...value]) : typeof value === 'object' && value !== null ? Object.freeze({ ...value }) : value;
  }
  return Object.freeze(out) as unknown as ModelInfo;
}

/** A built-in route's settings overlaid field by field with what the config gives (undefined fields don't count). */
export function overlayRoute<T extends object>(builtin: T | undefined, given: T): T {
  const out: Record<string, unknown> = { ...(builtin ?? {}) };
  for (const [key, item] of Object.entries(given)) if (item !== undefined) out[key] = item;
  return out as T;
}
