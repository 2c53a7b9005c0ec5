/**
 * The tools-workspace plugin's config (validated by the plugin host before setup).
 */
import { isAbsolute } from 'node:path';
import { z } from '../../runtime/index.ts';

export const TOOL_NAMES = ['read_file', 'write_file', 'edit_file', 'list_dir', 'grep', 'exec_command'] as const;
export type WorkspaceToolName = (typeof TOOL_NAMES)[number];

const MIB = 1024 * 1024;

/** What a command gets of the harness's environment by default: the shell's basics, no secrets. */
export const DEFAULT_PASS_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES', 'TERM', 'COLORTERM', 'NO_COLOR', 'TZ', 'TMPDIR'] as const;
const positiveInt = () => z.number().int().positive();

export const workspaceToolsConfig = z.strictObject({
  /** The workspace root (absolute). Default: each session's own `cwd`, read at call time. */
  root: z
    .string()
    .refine((value) => isAbsolute(value), { message: 'root must be an absolute path (use path.resolve(...) in harness.config.ts)' })
    .optional(),
  /** Which tools to register. Default: all of them. */
  tools: z.array(z.enum(TOOL_NAMES)).optional(),
  /** Close-out timeout for the file tools, ms (default: the runtime's, 120,000). */
  timeoutMs: positiveInt().optional(),
  /** Close-out output cap, in characters, for every tool but read_file (default 16,000). */
  maxOutputChars: positiveInt().default(16_000),
  read: z
    .strictObject({
      /** Bytes of file text one read_file window may hold (default 1 MiB). */
      maxBytes: positiveInt().default(MIB),
      /** Lines per window when the call gives no `limit`. */
      defaultLimit: positiveInt().default(2000),
      /** Longer lines are cut, with a note. */
      maxLineChars: positiveInt().default(2000),
      /** read_file's output cap, in characters; the window is fitted into it. */
      maxOutputChars: positiveInt().default(64_000),
    })
    .prefault({}),
  write: z
    .strictObject({
      /** Largest content write_file accepts, and largest file edit_file edits, in bytes (default 10 MiB). */
      maxBytes: positiveInt().default(10 * MIB),
    })
    .prefault({}),
  listDir: z
    .strictObject({
      /** Entries listed at most (default 1000). */
      maxEntries: positiveInt().default(1000),
    })
    .prefault({}),
  grep: z
    .strictObject({
      /** Matches reported when the call gives no `max_results` (default 100). */
      defaultMaxResults: positiveInt().default(100),
      /** Files larger than this are skipped, in bytes (default 10 MiB). */
      maxFileBytes: positiveInt().default(10 * MIB),
      /** Longer matching lines are cut (default 500). */
      maxLineChars: positiveInt().default(500),
    })
    .prefault({}),
  exec: z
    .strictObject({
      /** The shell run as `<shell> -c <command>`. */
      shell: z.string().default('/bin/bash'),
      /** Default and longest timeout of one command, ms (default 120,000). */
      timeoutMs: positiveInt().default(120_000),
      /** Between SIGTERM and SIGKILL of the process group, ms. */
      killGraceMs: positiveInt().default(2000),
      /**
       * Whether commands get the harness process's whole environment (API keys included). Default
       * false: a clean environment of the `passEnv` variables, `env` and `vault` (seed 000).
       */
      inheritEnv: z.boolean().default(false),
      /** The harness's variables a command gets (when set), by name. Default {@link DEFAULT_PASS_ENV}. */
      passEnv: z.array(z.string().min(1)).default([...DEFAULT_PASS_ENV]),
      /** Plain variables for commands, over the passed ones. */
      env: z.record(z.string(), z.string()).default({}),
      /**
       * Secret variables for commands (seed 000 `EnvironmentConfig.vault`), over `env`: their values
       * are masked (`[redacted <NAME>]`) in whatever is journaled or printed, the command's output included.
       */
      vault: z.record(z.string(), z.string()).default({}),
    })
    .prefault({}),
});

export type WorkspaceToolsConfig = z.output<typeof workspaceToolsConfig>;
