export * from './bus.ts';
export * from './context.ts';
export * from './errors.ts';
export * from './fiber.ts';
export * from './freeze.ts';
export * from './plugin.ts';
export { importGeneration } from './module-loader.ts';
export * from './schema.ts';
