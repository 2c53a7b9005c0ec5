/**
 * `harness-runtime/testing`: what a plugin author needs in their own tests, offline.
 *
 * - the scripted model with inline scripts (`scriptedModel`, `compileTestScript`);
 * - a harness for a test and one turn on it (`createTestHarness`, `runTurn`, `allowAll`);
 * - a loopback provider server on 127.0.0.1 that serves recorded SSE bodies byte for byte to the
 *   real `openai` / `@anthropic-ai/sdk` clients (`startFixtureServer` and its body helpers);
 * - the conformance kit for `llm/stream` middleware (`checkMiddleware`).
 *
 * ```ts
 * import { createTestHarness, runTurn } from 'harness-runtime/testing';
 * const harness = await createTestHarness({ script: [{ toolCalls: [{ name: 'greet', arguments: { name: 'Ada' } }] }, { text: 'Done.' }], plugins: [{ plugin: greeter }] });
 * const turn = await runTurn(harness, 'Greet Ada');
 * turn.text;       // 'Done.'
 * await harness.dispose();
 * ```
 */
export { compileTestScript, scriptedModel, type ScriptedModelOptions, type TestScript } from './scripted.ts';
export { allowAll, createTestHarness, runTurn, type TestHarness, type TestHarnessOptions, type TurnRecord } from './turn.ts';
export {
  fixturePath,
  fixtureToSse,
  inferWrapMode,
  providerErrorBody,
  readFixture,
  repeatSseFrames,
  splitResponsesBodies,
  splitSseFrames,
  sseFrame,
  startFixtureServer,
  type FixtureResponse,
  type FixtureServer,
  type FixtureServerOptions,
  type RecordedRequest,
  type WrapMode,
} from './fixture-server.ts';
export type { JsonScript, ScriptContext, ScriptFunction, ScriptReply, ScriptToolCall } from '../plugins/llm-scripted/index.ts';
export {
  checkMiddleware,
  type CheckMiddlewareOptions,
  type MiddlewareInvariant,
  type MiddlewareReport,
  type MiddlewareViolation,
  type StreamMiddleware,
} from './check-middleware.ts';
export { expectCassette, type CassetteReport, type RunCassetteOptions, type Fault } from './cassette.ts';
