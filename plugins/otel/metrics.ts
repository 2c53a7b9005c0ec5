/**
 * The GenAI client metrics (histograms, with the conventions' advised buckets):
 * `gen_ai.client.token.usage` ({token}, per `gen_ai.token.type` input / output),
 * `gen_ai.client.operation.duration` (s, with `error.type` when the call failed) and
 * `gen_ai.client.operation.time_to_first_chunk` (s, streaming calls that streamed something).
 */
import type { Attributes, Histogram, Meter } from '@opentelemetry/api';
import type { TokenUsage } from '../../runtime/index.ts';
import { DURATION_BUCKETS, ERROR_TYPE, GEN_AI, METRIC, OPERATION, TOKEN_BUCKETS, usageAttributes } from './conventions.ts';

/** One finished model call, as the trace builder saw it. */
export interface CallMeasurement {
  readonly provider: string;
  readonly requestModel: string;
  readonly responseModel?: string;
  readonly durationSeconds: number;
  readonly timeToFirstChunkSeconds?: number;
  readonly usage?: TokenUsage;
  readonly errorType?: string;
}

export class GenAiMetrics {
  private readonly tokenUsage: Histogram;
  private readonly duration: Histogram;
  private readonly timeToFirstChunk: Histogram;

  constructor(meter: Meter) {
    this.tokenUsage = meter.createHistogram(METRIC.TOKEN_USAGE, { unit: '{token}', description: 'Number of input and output tokens used.', advice: { explicitBucketBoundaries: TOKEN_BUCKETS } });
    this.duration = meter.createHistogram(METRIC.OPERATION_DURATION, { unit: 's', description: 'GenAI operation duration.', advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
    this.timeToFirstChunk = meter.createHistogram(METRIC.TIME_TO_FIRST_CHUNK, {
      unit: 's',
      description: 'Time to receive the first chunk of the response stream.',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
  }

  recordCall(call: CallMeasurement): void {
    const base: Attributes = { [GEN_AI.OPERATION_NAME]: OPERATION.CHAT, [GEN_AI.PROVIDER_NAME]: call.provider, [GEN_AI.REQUEST_MODEL]: call.requestModel };
    if (call.responseModel !== undefined) base[GEN_AI.RESPONSE_MODEL] = call.responseModel;
    this.duration.record(Math.max(0, call.durationSeconds), call.errorType === undefined ? base : { ...base, [ERROR_TYPE]: call.errorType });
    if (call.timeToFirstChunkSeconds !== undefined) this.timeToFirstChunk.record(Math.max(0, call.timeToFirstChunkSeconds), base);
    const usage = usageAttributes(call.usage);
    const input = usage[GEN_AI.USAGE_INPUT_TOKENS];
    const output = usage[GEN_AI.USAGE_OUTPUT_TOKENS];
    if (input !== undefined) this.tokenUsage.record(input, { ...base, [GEN_AI.TOKEN_TYPE]: 'input' });
    if (output !== undefined) this.tokenUsage.record(output, { ...base, [GEN_AI.TOKEN_TYPE]: 'output' });
  }
}
