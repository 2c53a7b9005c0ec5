/**
 * Asking a person about one tool call in a terminal (the `ask` of the asking approval policies).
 *
 * Before the y/n question the person sees everything the call would do: the full command of
 * `exec_command`, or the full arguments as pretty-printed JSON — unless the one-line preview above
 * (`→ name {…}`) already showed all of it. Arguments longer than {@link FULL_VIEW_LIMIT} characters
 * are shown as head and tail with a marker saying how much is not shown, and the question offers
 * `v` to print everything before answering (`v` works at any question).
 *
 * Only `y`/`yes` allows once; `a`/`always` allows this call and every later call of the same tool
 * in this session without asking again ({@link SessionAllowances}; journaled as such). Every other
 * answer denies, and the journal says what happened: "the user said no" for `n`/`no` only; "no
 * answer (Enter; the default is no)", "unrecognised answer "maybe" taken as no", "no answer
 * (Ctrl-C)", "no answer (end of input)", … otherwise.
 */
import type { ApprovalAnswer, ApprovalRequest, ApproveFn } from '../runtime/index.ts';
import { diffLine, editDiff, editInput } from './diff-view.ts';
import type { Io } from './env.ts';
import { formatCount, oneLine, PREVIEW_CHARS, printable } from './format.ts';

/** A person's answer: allow, or deny and why. */
export interface AskAnswer {
  readonly allow: boolean;
  /** Why the call was denied (journaled as the decision's reason). */
  readonly reason?: string;
  /** The answer was "always": allow this tool for the rest of the session. */
  readonly always?: boolean;
}

/** Asks a person about one tool call. */
export type Ask = (request: ApprovalRequest) => Promise<AskAnswer>;

/** One reply at the prompt: what was typed, or why nothing was (`Ctrl-C`, `end of input`, …). */
export type Reply = { readonly text: string } | { readonly none: string };

/** Arguments longer than this (in characters) are shown as head and tail, with `v` to see all. */
export const FULL_VIEW_LIMIT = 4000;
const HEAD_CHARS = 1500;
const TAIL_CHARS = 1500;

/**
 * The full text of a call's arguments: exec_command's command as is, edit_file's change as a unified
 * diff (`diff: true`; in the file's context when `workspace` has it), else pretty-printed JSON.
 */
export function argumentsText(request: Pick<ApprovalRequest, 'name' | 'arguments' | 'input'>, workspace?: string): { label: string; text: string; compact: string; diff?: boolean } {
  let parsed: unknown;
  let compact = request.arguments;
  try {
    parsed = JSON.parse(request.arguments);
    compact = JSON.stringify(parsed);
  } catch {
    parsed = undefined;
  }
  const input = (request.input ?? parsed) as Record<string, unknown> | undefined;
  if (request.name === 'exec_command' && input && typeof input.command === 'string') {
    const extra = Object.keys(input).filter((key) => key !== 'command');
    const text = extra.length ? `${input.command}\n(${extra.map((key) => `${key}: ${JSON.stringify(input[key])}`).join(', ')})` : input.command;
    return { label: `${request.name} will run`, text, compact };
  }
  const edit = request.name === 'edit_file' ? editInput(input) : undefined;
  if (edit) {
    const { diff, inContext } = editDiff(edit, workspace);
    const what = [...(edit.replace_all ? ['every occurrence'] : []), ...(inContext ? [] : ['the replaced text alone'])];
    return { label: `${request.name} will change ${edit.path}${what.length ? `, ${what.join(', ')}` : ''}`, text: diff, compact, diff: true };
  }
  return { label: `${request.name} arguments`, text: parsed === undefined ? request.arguments : JSON.stringify(parsed, null, 2), compact };
}

/**
 * What to print before the question: nothing when the preview line showed all the arguments, else
 * the arguments (head and tail when long, everything with `full`). `cut` is how many characters were
 * left out.
 */
export function argumentsBlock(request: Pick<ApprovalRequest, 'name' | 'arguments' | 'input'>, io: Io, full = false, workspace?: string): { text: string; cut: number } {
  const { c } = io;
  const { label, text, compact, diff } = argumentsText(request, workspace);
  if (!full && !diff && oneLine(compact, Number.MAX_SAFE_INTEGER) === compact && compact.length <= PREVIEW_CHARS) return { text: '', cut: 0 };
  const bar = c.dim('  │ ');
  // printable() also shows bidirectional overrides as \u202e etc.: what is shown is what runs.
  const body = (part: string) => (diff ? part.split('\n').map((line) => diffLine(line, io)) : printable(part).split('\n')).map((line) => `${bar}${line}`).join('\n');
  const size = diff ? `${formatCount(text.split('\n').length)} lines of diff` : `${formatCount(text.length)} characters`;
  if (full || text.length <= FULL_VIEW_LIMIT) return { text: `${c.dim(`  ${label} (${size}):`)}\n${body(text)}\n`, cut: 0 };
  const cut = text.length - HEAD_CHARS - TAIL_CHARS;
  const marker = c.yellow(`  … ${formatCount(cut)} characters not shown — answer v to see everything …`);
  return { text: `${c.dim(`  ${label} (${size}; the start and the end):`)}\n${body(text.slice(0, HEAD_CHARS))}\n${marker}\n${body(text.slice(-TAIL_CHARS))}\n`, cut };
}

/** The y/n question for a tool call (`a` = always for this tool; `v` offered when part of the arguments is not shown). */
export function approvalQuestion(request: Pick<ApprovalRequest, 'name' | 'permission'>, io: Io, offerView = false): string {
  const choices = offerView ? '[y/N, a = always in this session, v = view all]' : '[y/N, a = always in this session]';
  return `${io.c.yellow('?')} allow ${io.c.bold(request.name)} ${io.c.dim(`(${request.permission})`)}? ${choices} `;
}

/**
 * Shows the call and asks until there is an answer; `question` prints its prompt and resolves to
 * what was typed (or why nothing was).
 */
export async function askInTerminal(request: ApprovalRequest, io: Io, question: (prompt: string) => Promise<Reply>, workspace?: string): Promise<AskAnswer> {
  const block = argumentsBlock(request, io, false, workspace);
  if (block.text) io.out.write(block.text);
  let offerView = block.cut > 0;
  for (;;) {
    const reply = await question(approvalQuestion(request, io, offerView));
    if ('none' in reply) return { allow: false, reason: `no answer (${reply.none})` };
    const answer = reply.text.trim().toLowerCase();
    if (answer === 'y' || answer === 'yes') return { allow: true };
    if (answer === 'a' || answer === 'always') return { allow: true, always: true };
    if (answer === 'n' || answer === 'no') return { allow: false, reason: 'the user said no' };
    if (answer === 'v' || answer === 'view') {
      io.out.write(argumentsBlock(request, io, true, workspace).text);
      offerView = false;
      continue;
    }
    if (answer === '') return { allow: false, reason: 'no answer (Enter; the default is no)' };
    return { allow: false, reason: `unrecognised answer ${JSON.stringify(oneLine(reply.text, 40))} taken as no` };
  }
}

/** The journaled reason of an "always" answer, and of the calls it then allows. */
export const ALWAYS_REASON = {
  answered: (tool: string) => `the user said always: ${tool} is allowed for the rest of the session`,
  remembered: (tool: string, turn: number) => `always: the user said always for ${tool} in turn ${turn}`,
} as const;

/**
 * The tools a person answered "always" for, for the rest of one session (a chat's, or a run's turn).
 * {@link ask} stands in front of the terminal question: a remembered tool is allowed without asking;
 * {@link approver} stands in front of the policy's approver and journals such a decision as what it
 * was (`decidedBy: 'user'`, with an {@link ALWAYS_REASON} reason). The policy still decides whether
 * to ask at all: "always" never allows what the policy denies without asking (`deny-all`).
 */
export class SessionAllowances {
  /** Tool name → the turn in which "always" was answered. */
  private readonly tools = new Map<string, number>();
  /** Calls answered "always" (callId → tool), or allowed because of it, not yet journaled. */
  private readonly pending = new Map<string, 'answered' | 'remembered'>();

  /** The tools allowed so far, with the turn of the "always". */
  get allowed(): ReadonlyMap<string, number> {
    return this.tools;
  }

  /** Forgets every "always" (another session begins). */
  clear(): void {
    this.tools.clear();
    this.pending.clear();
  }

  /** Wraps the terminal question: a remembered tool is allowed without asking; an "always" is remembered. */
  ask(inner: Ask): Ask {
    return async (request) => {
      if (this.tools.has(request.name)) {
        this.pending.set(request.callId, 'remembered');
        return { allow: true };
      }
      const answer = await inner(request);
      if (answer.allow && answer.always) {
        this.tools.set(request.name, request.turn);
        this.pending.set(request.callId, 'answered');
      }
      return answer;
    };
  }

  /** Wraps the policy's approver so an allow that came from "always" is journaled with its reason. */
  approver(inner: ApproveFn | undefined): ApproveFn | undefined {
    if (inner === undefined) return undefined;
    return async (request) => {
      const answer: ApprovalAnswer = await inner(request);
      const why = this.pending.get(request.callId);
      this.pending.delete(request.callId);
      const decision = typeof answer === 'string' ? answer : answer.decision;
      if (why === undefined || decision !== 'allow') return answer;
      const reason = why === 'answered' ? ALWAYS_REASON.answered(request.name) : ALWAYS_REASON.remembered(request.name, this.tools.get(request.name) ?? request.turn);
      return { decision: 'allow', decidedBy: 'user', reason };
    };
  }
}
