export * from './types.ts';
export * from './message.ts';
export * from './errors.ts';
export * from './assembler.ts';
export * from './adapter.ts';
export * from './call-config.ts';
export * from './registry.ts';
export * from './service.ts';
