/**
 * Runtime services installed into every harness besides `ctx.llm` (tools, sessions, …). Each
 * installer may declare hooks and extend the kernel's contexts.
 */
import type { Kernel } from './kernel/context.ts';
import type { LlmService } from './llm/service.ts';
import type { HarnessConfig } from './harness.ts';

export interface RuntimeServices {
  readonly kernel: Kernel;
  readonly llm: LlmService;
  readonly config: HarnessConfig;
  readonly dataDir: string;
}

export type RuntimeExtension = (services: RuntimeServices) => void;

export const runtimeExtensions: RuntimeExtension[] = [];
