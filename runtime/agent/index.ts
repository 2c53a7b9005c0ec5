export * from './tools.ts';
export * from './closeout.ts';
export * from './hooks.ts';
export * from './session.ts';
