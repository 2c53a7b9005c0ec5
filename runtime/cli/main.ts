/**
 * The `harness` command (DESIGN "Layout": runtime/cli). `bin/harness.js` registers tsx and calls
 * {@link main}. Every command resolves the config (`--config`, else `$HARNESS_CONFIG`, else
 * `./harness.config.ts` in the working directory, else the project's own) and the data directory
 * (`--data-dir`, else the config's `dataDir`, else `$HARNESS_HOME`, else `~/.harness`).
 *
 * Errors: a HarnessError prints `error CODE: message` and exits 1; anything else prints its message
 * (its stack with `--debug`) and exits 1.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { HarnessError } from '../index.ts';
import { cliVersion, processIo, writeAll, type Io } from './env.ts';
import type { GlobalOptions } from './setup.ts';
import { POLICIES } from './setup.ts';

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number ≥ 0.');
  return n;
};

/** Builds the command tree; `exit` receives each command's exit code. */
export function buildProgram(io: Io, exit: (code: number) => void): Command {
  const program = new Command('harness')
    .description('Harness — an event-sourced agent runtime. Every session is an append-only journal you can replay, resume, fork and re-run offline.')
    .version(cliVersion(), '-V, --version')
    .option('--config <path>', 'harness config file (default: ./harness.config.ts if present, else the project\'s harness.config.ts)')
    .option('--data-dir <dir>', 'where journals live, in <dir>/sessions (default: $HARNESS_HOME, else ~/.harness)')
    .option('--debug', 'print stacks of unexpected errors and info diagnostics')
    .option('--no-color', 'no colours (also: NO_COLOR=1)')
    .showSuggestionAfterError(true)
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) })
    .exitOverride();
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  const turnOptions = (command: Command): Command =>
    command
      .option('-p, --provider <id>', 'provider to use (scripted, openai, deepseek, anthropic, …)')
      .option('-m, --model <id>', 'model id (default: the config\'s, or the provider\'s first listed model)')
      .addOption(new Option('-a, --approve <policy>', 'approval policy for tool calls; asking policies prompt y/n in a terminal').choices(POLICIES).default('read-only'))
      .option('--cwd <dir>', 'workspace the tools work in (default: the current directory, or the resumed session\'s)')
      .option('-r, --resume <session>', 'continue a session (id or journal path)')
      .option('--reasoning-effort <effort>', 'reasoning effort for the model (e.g. low, medium, high)');

  turnOptions(program.command('run').argument('<prompt>', 'what to ask').description('run one turn and stream it; prints the journal and how to replay it')).action(async (prompt: string, options) => {
    const { runCommand } = await import('./commands/run.ts');
    exit(await runCommand(prompt, options, globals(), io));
  });

  turnOptions(program.command('chat').description('multi-turn REPL (Ctrl-C cancels the running turn; Ctrl-C twice, or Ctrl-D, quits)')).action(async (options) => {
    const { chatCommand } = await import('./commands/chat.ts');
    exit(await chatCommand(options, globals(), io, { watch: false }));
  });

  turnOptions(program.command('dev').description('chat, plus hot reload: a saved change in a plugin folder of the config reloads that plugin in the live session')).action(async (options) => {
    const { chatCommand } = await import('./commands/chat.ts');
    exit(await chatCommand(options, globals(), io, { watch: true }));
  });

  program
    .command('replay')
    .argument('<session>', 'session id or journal path')
    .description('print a session as a transcript, as raw events, as its state at a seq, verify it, or re-run it offline')
    .option('--json', 'raw events, one JSON object per line (with --at: the state as JSON)')
    .option('--at <seq>', 'the state at this seq: header, messages, usage', positiveInt)
    .option('--verify', 'integrity check; exits 1 on any damage')
    .option('--cassette', 're-run the session offline through llm-replay and report any divergence (exit 1)')
    .option('--salvage', 'skip corrupt lines instead of failing (transcript and --json)')
    .action(async (session: string, options) => {
      const { replayCommand } = await import('./commands/replay.ts');
      exit(await replayCommand(session, options, globals(), io));
    });

  program
    .command('sessions')
    .description('list sessions: id, title, turns, tokens, last update')
    .option('--json', 'one JSON summary per line')
    .action(async (options) => {
      const { sessionsCommand } = await import('./commands/sessions.ts');
      exit(await sessionsCommand(options, globals(), io));
    });

  program
    .command('fork')
    .argument('<session>', 'session id or journal path')
    .requiredOption('--at <seq>', 'keep the events 1..seq (0 keeps none)', positiveInt)
    .option('--close-turn', 'allow a seq inside a turn: the fork closes it with synthetic events')
    .option('--id <id>', 'id of the new session (default: a random UUID)')
    .description('start a new session from a prefix of another')
    .action(async (session: string, options) => {
      const { forkCommand } = await import('./commands/sessions.ts');
      exit(await forkCommand(session, options, globals(), io));
    });

  const importCommand = program.command('import').description('import sessions from other tools');
  importCommand
    .command('dsh')
    .argument('<file>', 'a DeepSeek Harness session.jsonl')
    .option('--id <id>', 'id of the new session (default: theirs)')
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
    if (error instanceof CommanderError) return error.exitCode;
    return reportError(error, io, program.opts<GlobalOptions>().debug === true);
  }
}

/** `error CODE: message` for a HarnessError; message (stack with --debug) otherwise. Returns 1. */
export function reportError(error: unknown, io: Io, debug: boolean): number {
  const { c } = io;
  if (HarnessError.is(error)) {
    io.err.write(`${c.red(`error ${error.code}:`)} ${error.message}\n`);
    if (debug) {
      io.err.write(`${c.dim(error.stack ?? '')}\n`);
      if (error.cause instanceof Error) io.err.write(`${c.dim(`cause: ${error.cause.stack ?? error.cause.message}`)}\n`);
    }
    return 1;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.err.write(`${c.red('error:')} ${message}\n`);
  if (debug) io.err.write(`${c.dim(error instanceof Error ? (error.stack ?? '') : '')}\n`);
  else io.err.write(c.dim('(an unexpected error; run with --debug for the stack)\n'));
  return 1;
}

/** Entry point of bin/harness.js: runs, flushes, exits with the command's code. */
export async function runCli(argv: readonly string[]): Promise<never> {
  const io = processIo();
  const code = await main(argv, io);
  await writeAll(io.out, '');
  await writeAll(io.err, '');
  process.exit(code);
}
