/**
 * plugins/otel/conventions.ts copies the GenAI names (the semantic-conventions package advises
 * copying incubating names rather than importing them): each copy equals the pinned package's.
 */
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { ERROR_TYPE, GEN_AI, METRIC, OPERATION, usageAttributes } from '../../plugins/otel/conventions.ts';

describe('otel conventions', () => {
  it('every gen_ai attribute, operation and metric name equals @opentelemetry/semantic-conventions/incubating', () => {
    const table = incubating as unknown as Record<string, string>;
    for (const [key, name] of Object.entries(GEN_AI)) expect([key, table[`ATTR_GEN_AI_${key}`]]).toEqual([key, name]);
    for (const [key, name] of Object.entries(OPERATION)) expect(table[`GEN_AI_OPERATION_NAME_VALUE_${key}`]).toBe(name);
    expect(table.METRIC_GEN_AI_CLIENT_TOKEN_USAGE).toBe(METRIC.TOKEN_USAGE);
    expect(table.METRIC_GEN_AI_CLIENT_OPERATION_DURATION).toBe(METRIC.OPERATION_DURATION);
    expect(table.METRIC_GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK).toBe(METRIC.TIME_TO_FIRST_CHUNK);
    expect(table.ATTR_ERROR_TYPE).toBe(ERROR_TYPE);
  });

  it('usage: input counts cached tokens (Harness keeps them apart); an unreported class is absent, never 0', () => {
    expect(usageAttributes({ inputTokens: 10, cacheReadTokens: 5, cacheWriteTokens: 2, outputTokens: 7, reasoningTokens: 3 })).toEqual({
      'gen_ai.usage.input_tokens': 17,
      'gen_ai.usage.cache_read.input_tokens': 5,
      'gen_ai.usage.cache_creation.input_tokens': 2,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.usage.reasoning.output_tokens': 3,
    });
    expect(usageAttributes({ outputTokens: 4 })).toEqual({ 'gen_ai.usage.output_tokens': 4 });
    expect(usageAttributes(undefined)).toEqual({});
  });
});
