/**
 * The public API of Harness: everything a plugin author imports comes from here.
 */
export * from './kernel/index.ts';
export * from './llm/index.ts';
export * from './agent/index.ts';
export * from './harness.ts';
export { z } from 'zod';
export * from './session/index.ts';
