/**
 * The `harness` command (DESIGN "Layout": cli/). `bin/harness.js` runs `cli/bin.ts` (built:
 * dist/cli/bin.js), which calls {@link runCli}. Every command resolves the config (`--config`, else
 * `$HARNESS_CONFIG`, else `./harness.config.ts` in the working directory, else the built-in stack) and the data directory
 * (`--data-dir`, else the config's `dataDir`, else `$HARNESS_HOME`, else `~/.harness`).
 *
 * Exit codes ({@link EXIT_CODES}): 0 done, 1 error, 2 usage (a command line the parser refuses, an
 * INVALID_ARGUMENTS, EMPTY_PROMPT or PROMPT_TOO_LARGE error), 130 interrupted (Ctrl-C), 128 + n stopped by a signal
 * (143 SIGTERM, 129 SIGHUP).
 *
 * Errors: a HarnessError prints `error CODE: message` and exits 1 (2 for a usage error), followed by a `hint:` line with
 * the flag or command to use when the CLI has one for that code (and, for a config or plugin that
 * does not load, the `file:line:col` of the problem); a file-system error prints its code the same
 * way; anything else prints its message (its stack with `--debug`) and exits 1.
 *
 * SIGTERM and SIGHUP stop a running turn like the first Ctrl-C (the journal is closed, its lock
 * released) and exit 128 + the signal's number; output to a closed pipe is dropped and the process
 * exits 0 (see lifecycle.ts).
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { HarnessError } from '../runtime/index.ts';
import { cliVersion, configSource, processIo, selfCommand, type Io } from './env.ts';
import { printable } from './format.ts';
import { exitAfterFlush, installProcessHandlers, STOP_FLUSH_MS, stopRequested } from './lifecycle.ts';
import { DEFAULT_MAX_PROMPT_BYTES } from './prompt.ts';
import type { GlobalOptions } from './setup.ts';
import { errorLocation, hintFor, openedDataDir, POLICIES, withConfigPath } from './setup.ts';

/** The exit codes, as `--help` and the README document them. */
export const EXIT_CODES = { done: 0, error: 1, usage: 2, interrupted: 130, SIGHUP: 129, SIGTERM: 143 } as const;

/** Error codes that mean "the command line is wrong" (exit 2, like the parser's own errors). */
const USAGE_ERRORS: ReadonlySet<string> = new Set(['INVALID_ARGUMENTS', 'EMPTY_PROMPT', 'PROMPT_TOO_LARGE']);

/** A seq: decimal digits only (`Number` would take "", "0x10", "1e2", " 35"; no trimming either), at most 2^53 - 1. */
const positiveInt = (value: string): number => {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a whole number ≥ 0 in decimal digits (e.g. 12).');
  return n;
};

/** `--id`: an empty one is refused (it once made a random id without a word); the id's form is checked where it is used. */
const sessionIdOption = (value: string): string => {
  if (value.trim() === '') throw new InvalidArgumentError('an empty id; give one (letters, digits, "-", "_", "."), or leave --id out.');
  return value;
};

/** Builds the command tree; `exit` receives each command's exit code. */
export function buildProgram(io: Io, exit: (code: number) => void): Command {
  const program = new Command('harness')
    .description('Harness — an event-sourced agent runtime. Every session is an append-only journal you can replay, resume, fork and re-run offline.')
    .version(cliVersion(), '-V, --version')
    .option('--config <path>', 'harness config file (default: $HARNESS_CONFIG if set, else ./harness.config.ts (.mts, .js, .mjs) if present, else the built-in stack)')
    .option('--data-dir <dir>', "where journals live, in <dir>/sessions (default: the config's dataDir, else $HARNESS_HOME, else ~/.harness)")
    .option(
      '--store <url>',
      "where sessions live: file (the JSONL journals of the data directory; the default), file:<dir> (those of data directory <dir>), or postgres://user@host:5432/db (default: the config's store)",
    )
    .option('--debug', 'print stacks of unexpected errors and info diagnostics')
    .option('--no-color', 'no colours (also: NO_COLOR=1)')
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => io.out.write(s),
      writeErr: (s) => io.err.write(s),
      // The parser's own errors (a missing argument, an unknown command or option) in the CLI's one form.
      outputError: (s, write) =>
        write(
          `${s.replace(/^error: /, 'error INVALID_ARGUMENTS: ').trimEnd()}\nhint: \`${selfCommand()} --help\` (or \`${selfCommand()} <command> --help\`) lists the commands, arguments and options.\n`,
        ),
    })
    .addHelpText(
      'after',
      [
        '',
        'Environment:',
        '  HARNESS_CONFIG     the config file when --config is not given',
        "  HARNESS_HOME       the data directory when neither --data-dir nor the config's dataDir is given",
        '  OPENAI_API_KEY, DEEPSEEK_API_KEY, ANTHROPIC_API_KEY   keys of the real providers',
        '  OPENAI_BASE_URL, DEEPSEEK_BASE_URL, ANTHROPIC_BASE_URL  other endpoints for them',
        '  OPENAI_COMPATIBLE_BASE_URL  a Chat Completions server for -p openai-compatible (vLLM, llama.cpp, Ollama…;',
        '                     default http://127.0.0.1:11434/v1); OPENAI_COMPATIBLE_API_KEY only if it wants one,',
        '                     OPENAI_COMPATIBLE_MODEL the model when -m is not given',
        '  NO_COLOR           no colours',
        '',
        'Exit codes: 0 done · 1 error · 2 usage (a bad command line) · 130 interrupted (Ctrl-C) ·',
        '  143 / 129 stopped by SIGTERM / SIGHUP',
        '',
        'Tools: the file tools are confined to the workspace (--cwd); exec_command runs a shell in the',
        'workspace directory, which can reach anything the shell can — approve it with care.',
      ].join('\n'),
    )
    .exitOverride();
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  /** Options of run, chat and dev; `picker`: `-r` with no id opens the session picker (not for run, whose next argument is the prompt). */
  const turnOptions = (command: Command, { picker }: { picker: boolean }): Command =>
    command
      .option('-p, --provider <id>', 'provider to use (scripted, openai, deepseek, anthropic, openai-compatible, …)')
      .option('-m, --model <id>', "model id (default: the config's, or the provider's first listed model)")
      .addOption(new Option('-a, --approve <policy>', "approval policy for tool calls (default: the approvals plugin's, read-only); asking policies prompt y/n in a terminal").choices(POLICIES))
      .option('--cwd <dir>', "workspace the tools work in; must exist (default: the current directory, or the resumed session's)")
      .option(
        picker ? '-r, --resume [session]' : '-r, --resume <session>',
        `continue a session (id, unique id prefix or journal path)${picker ? '; with no id: pick one from a list (in a terminal)' : ''}`,
      )
      .option('-c, --continue', 'continue the latest session of the workspace (--cwd, else the current directory)')
      .option('--reasoning-effort <effort>', 'reasoning effort for the model (e.g. low, medium, high)')
      .option('--max-prompt-bytes <bytes>', `largest prompt taken, bytes (default ${DEFAULT_MAX_PROMPT_BYTES}, as serve's body limit; PROMPT_TOO_LARGE beyond)`, positiveInt);

  turnOptions(program.command('run').argument('<prompt>', 'what to ask (- reads it from stdin)').description('run one turn and stream it; prints the journal and how to replay it'), { picker: false })
    .option('--json', "print the journal's records instead of the transcript: its header, then each event as it is journaled, one JSON object per line, nothing else on stdout")
    .action(async (prompt: string, options) => {
      const { runCommand } = await import('./commands/run.ts');
      exit(await runCommand(prompt, options, globals(), io));
    });

  turnOptions(program.command('chat').description('multi-turn REPL (Ctrl-C cancels the running turn; Ctrl-C twice, or Ctrl-D, quits)'), { picker: true }).action(async (options) => {
    const { chatCommand } = await import('./commands/chat.ts');
    exit(await chatCommand(options, globals(), io, { watch: false }));
  });

  turnOptions(
    program.command('dev').description('chat, plus hot reload: a saved plugin file or config reloads what changed in the live session (journaled); a plugin that does not load is waited for'),
    { picker: true },
  ).action(async (options) => {
    const { chatCommand } = await import('./commands/chat.ts');
    exit(await chatCommand(options, globals(), io, { watch: true }));
  });

  program
    .command('replay')
    .argument('<session>', 'session id, unique id prefix or journal path')
    .description('print a session as a transcript, as raw events, as its state at a seq, verify it, or re-run it offline')
    .option('--json', 'raw events, one JSON object per line (with --at: the state as JSON)')
    .option('--at <seq>', 'the state at this seq: header, messages, usage', positiveInt)
    .option('--verify', 'integrity check; exits 1 on any damage')
    .option('--cassette', "re-run the session offline with the config's plugins and the model replaced by the recording; report any divergence (exit 1)")
    .option('--run-tools <dir>', 'with --cassette: re-execute the tool calls in a scratch copy of <dir> (default: serve the recorded results)')
    .option('--inject <fault>', 'with --cassette: fail a recorded call, e.g. 2:disconnect@3, 1:status=429,retry-after=1, 3:stall (repeatable)', (value: string, list: string[] = []) => [
      ...list,
      value,
    ])
    .option('--update', 'with --cassette: write a divergent re-run as a new journal (a fork of the recording) and print its id')
    .addOption(new Option('-a, --approve <policy>', "with --cassette: the approval policy (default: the approvals plugin's)").choices(POLICIES))
    .option('--salvage', 'skip corrupt lines instead of failing (transcript and --json)')
    .option('--full', 'the transcript with whole tool outputs, every line uncut (by default: the first lines; a diff up to 80)')
    .action(async (session: string, options) => {
      const { replayCommand } = await import('./commands/replay.ts');
      exit(await replayCommand(session, options, globals(), io));
    });

  program
    .command('sessions')
    .description('list sessions: id, title, workspace, turns, tokens, last update')
    .option('--json', 'one JSON summary per line')
    .option('-w, --workspace <dir>', 'only the sessions of this workspace (e.g. . for the current directory)')
    .action(async (options) => {
      const { sessionsCommand } = await import('./commands/sessions.ts');
      exit(await sessionsCommand(options, globals(), io));
    });

  program
    .command('fork')
    .argument('<session>', 'session id, unique id prefix or journal path')
    .option('--at <seq>', 'keep the events 1..seq (0 keeps none; default: all of them, to the last seq)', positiveInt)
    .option('--close-turn', 'allow a seq inside a turn (refused otherwise, FORK_INSIDE_TURN): the fork closes that turn with synthetic events')
    .option('--id <id>', 'id of the new session (default: a random UUID)', sessionIdOption)
    .description('start a new session from another: all of its events, or (--at) a prefix of them')
    .action(async (session: string, options) => {
      const { forkCommand } = await import('./commands/sessions.ts');
      exit(await forkCommand(session, options, globals(), io));
    });

  const port = (value: string): number => {
    const n = positiveInt(value);
    if (n > 65_535) throw new InvalidArgumentError('expected a TCP port, 0..65535 (0 picks a free one).');
    return n;
  };
  program
    .command('serve')
    .description('serve the sessions over HTTP + Server-Sent Events (bearer token; 127.0.0.1 by default)')
    .option('--host <host>', 'interface to bind (default 127.0.0.1; anything else exposes your workspaces to the network)')
    .option('--port <port>', 'TCP port (default 7860; 0 picks a free one)', port)
    .option('--queue <url>', 'be one of several workers: submitted turns are jobs in a queue in this PostgreSQL database (postgres://…), run by any worker')
    .option('--cwd <dir>', 'workspace of sessions created without one (default: the current directory)')
    .addOption(new Option('-a, --approve <policy>', 'approval policy of turns that name none; asked calls wait for an answer over HTTP').choices(POLICIES))
    .option('--approval-timeout-ms <ms>', 'deny an approval nobody answers after this long (default 300000)', positiveInt)
    .option('--max-body-bytes <bytes>', 'largest request body (default 1048576; 413 beyond)', positiveInt)
    .addHelpText('after', '\nEnvironment:\n  HARNESS_SERVE_TOKEN  the bearer token (at least 16 characters); without it one is generated and printed\n')
    .action(async (options) => {
      const { serveCommand } = await import('./commands/serve.ts');
      exit(await serveCommand(options, globals(), io));
    });

  program
    .command('view')
    .argument('[session]', 'session id or unique id prefix to open (default: the list of sessions)')
    .description('the session viewer in your browser: read-only, on 127.0.0.1; prints the URL to open')
    .option('--port <port>', 'TCP port (default: a free one)', port)
    .action(async (session: string | undefined, options) => {
      const { viewCommand } = await import('./commands/view.ts');
      exit(await viewCommand(session, options, globals(), io));
    });

  program
    .command('init')
    .argument('[dir]', 'the project folder (default: the current one; created when missing)')
    .description('scaffold a project on harness-runtime: package.json, harness.config.ts, an example plugin and its offline test')
    .action(async (dir: string | undefined) => {
      const { initCommand } = await import('./commands/init.ts');
      exit(await initCommand(dir, io));
    });

  program
    .command('export')
    .argument('<session>', 'session id, unique id prefix or journal path')
    .description("write a session's journal as JSONL (the lines the file store holds, from any store) to stdout or a file, or (--otel) send its OpenTelemetry spans to a collector")
    .option('-o, --output <file>', 'write to this file (created; refused if it exists) instead of stdout')
    .option(
      '--otel [endpoint]',
      'send its OpenTelemetry spans and GenAI metrics, with the recorded times, to an OTLP/HTTP endpoint (default: $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)',
    )
    .option('--capture-content', 'with --otel: include prompts, completions, tool arguments and results (secrets redacted)')
    .action(async (session: string, options) => {
      const { exportCommand } = await import('./commands/export.ts');
      exit(await exportCommand(session, options, globals(), io));
    });

  const importCommand = program.command('import').description('import sessions: a Harness journal into a store, or a session of another tool');
  importCommand
    .command('harness')
    .argument('<file>', 'a Harness JSONL journal (e.g. from harness export)')
    .description("load a Harness journal into the store (--store, else the config's) under its own id, verbatim; refused when the id exists there")
    .action(async (file: string) => {
      const { importHarnessCommand } = await import('./commands/export.ts');
      exit(await importHarnessCommand(file, globals(), io));
    });
  importCommand
    .command('dsh')
    .argument('<file>', 'a DeepSeek Harness session.jsonl')
    .option('--id <id>', 'id of the new session (default: theirs)', sessionIdOption)
    .description('import a DeepSeek Harness session as a journal of ours')
    .action(async (file: string, options) => {
      const { importDshCommand } = await import('./commands/sessions.ts');
      exit(await importDshCommand(file, options, globals(), io));
    });

  return program;
}

/** Runs the CLI on `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => (code = c));
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    // --help and --version end with 0; every other parser error is a usage error.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_CODES.usage;
    const code = await reportError(error, io, program.opts<GlobalOptions>());
    return HarnessError.is(error) && USAGE_ERRORS.has(error.code) ? EXIT_CODES.usage : code;
  }
}

/** File-system errors the CLI names by their code (a path that is a file, a directory, unreadable…). */
const FILE_SYSTEM_CODES = /^E[A-Z]+$/;

/**
 * What goes before the caret under `lineText`'s character `column` (0-based, in characters): the
 * line's tabs where it has them, a space for anything else — so the caret lands under the character
 * however wide the terminal shows a tab.
 */
function caretPad(lineText: string, column: number): string {
  return printable(Array.from(lineText).slice(0, column).join('')).replace(/[^\t]/g, ' ');
}

/**
 * `error CODE: message` (plus the `file:line:col` of a config or plugin that does not load, and a
 * `hint:` line) for a HarnessError or a file-system error; message (stack with --debug) otherwise.
 * Returns 1.
 */
export async function reportError(error: unknown, io: Io, globals: GlobalOptions): Promise<number> {
  const { c } = io;
  const debug = globals.debug === true;
  if (HarnessError.is(error)) {
    const config = configSource(globals.config).path;
    const message = printable(withConfigPath(error, config));
    io.err.write(`${c.red(`error ${error.code}:`)} ${message}\n`);
    const where = await errorLocation(error, config).catch(() => undefined);
    if (where) {
      // A located schema issue's line already ends with its file:line:col: then only the line is shown.
      if (!message.includes(where.at)) io.err.write(`  at ${where.at}\n`);
      if (where.lineText !== undefined) io.err.write(`${c.dim(`  │ ${printable(where.lineText)}`)}\n${c.dim(`  │ ${caretPad(where.lineText, where.column ?? 0)}^`)}\n`);
    }
    const hint = hintFor(error, { globals, ...(openedDataDir ? { dataDir: openedDataDir } : {}) });
    if (hint) io.err.write(`${c.dim(`hint: ${hint}`)}\n`);
    if (debug) {
      io.err.write(`${c.dim(error.stack ?? '')}\n`);
      if (error.cause instanceof Error) io.err.write(`${c.dim(`cause: ${error.cause.stack ?? error.cause.message}`)}\n`);
    }
    return 1;
  }
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && FILE_SYSTEM_CODES.test(code)) {
    // Node's message starts with the code itself ("ENOENT: no such file…"): print it once.
    io.err.write(`${c.red(`error ${code}:`)} ${printable(message.startsWith(`${code}: `) ? message.slice(code.length + 2) : message)}\n`);
    if (debug) io.err.write(`${c.dim(error instanceof Error ? (error.stack ?? '') : '')}\n`);
    return 1;
  }
  io.err.write(`${c.red('error:')} ${printable(message)}\n`);
  if (debug) io.err.write(`${c.dim(error instanceof Error ? (error.stack ?? '') : '')}\n`);
  else io.err.write(c.dim('(an unexpected error; run with --debug for the stack)\n'));
  return 1;
}

/**
 * Entry point of bin/harness.js: runs, then exits with the command's code once its output has
 * reached the reader, however slow (a pipe) — or, when SIGTERM, SIGHUP or a closed output pipe ended
 * the command, with the stop's code after a bounded flush (see lifecycle.ts).
 */
export async function runCli(argv: readonly string[]): Promise<never> {
  const io = processIo();
  installProcessHandlers(io);
  const code = await main(argv, io);
  const stop = stopRequested();
  return exitAfterFlush(stop?.exitCode ?? code, stop ? STOP_FLUSH_MS : undefined);
}
