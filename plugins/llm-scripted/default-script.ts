/**
 * The built-in default script (`scripted-default`): a small, real agent task in the workspace it is
 * given — list the files, read one, answer with what it found — so the default run exercises tools,
 * approvals and the journal without a key or a network.
 */
import type { ScriptContext, ScriptReply } from './script.ts';

export function defaultScript(context: ScriptContext): ScriptReply {
  if (context.purpose === 'compaction') return { text: summarize(context) };
  if (context.purpose === 'session-title') return { text: context.prompt.split(/\s+/).slice(0, 6).join(' ') || 'Scripted session' };
  const listing = context.toolResults.find((result) => result.name === 'list_dir');
  const reading = context.toolResults.find((result) => result.name === 'read_file');
  if (listing === undefined) {
    if (!context.hasTool('list_dir')) {
      return { text: `You asked: ${quoted(context.prompt)}. I am the scripted demo model and I have no list_dir tool here, so I can only say that I received your message.` };
    }
    return {
      reasoning: `The user asked: ${quoted(context.prompt)}. I should look at the workspace before answering, starting with its files.`,
      text: 'Let me look at the workspace first.',
      toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }],
    };
  }
  if (listing.isError) return { text: `I could not list the workspace: ${firstLine(listing.text)}` };
  const entries = parseListing(listing.text);
  if (reading === undefined) {
    const file = pickFile(entries);
    if (file === undefined) return { text: `The workspace is empty or has no files I can read (${count(entries.length, 'entry', 'entries')}).` };
    if (!context.hasTool('read_file')) return { text: `The workspace has ${count(entries.length, 'entry', 'entries')}: ${entries.join(', ')}.` };
    return {
      reasoning: `The workspace has ${count(entries.length, 'entry', 'entries')}. ${file} looks like the most informative file; I will read it.`,
      text: `I'll read ${file}.`,
      toolCalls: [{ name: 'read_file', arguments: { path: file } }],
    };
  }
  const file = pickFile(entries) ?? 'the file';
  if (reading.isError) return { text: `The workspace has ${count(entries.length, 'entry', 'entries')} (${entries.join(', ')}), but I could not read ${file}: ${firstLine(reading.text)}` };
  const lines = contentLines(reading.text);
  const heading = lines.find((line) => line.trim() !== '') ?? '(empty)';
  return {
    text: [
      `Here is what I found. The workspace has ${count(entries.length, 'entry', 'entries')}: ${entries.join(', ')}.`,
      `${file} has ${count(lines.length, 'line')} and begins with:`,
      '',
      `> ${heading.trim()}`,
      '',
      'That is all this scripted demo model does: it is deterministic and offline. Point --provider at a real model to go further.',
    ].join('\n'),
  };
}

function summarize(context: ScriptContext): string {
  const prompts = context.messages.filter((message) => message.source.kind === 'user').length;
  const tools = context.messages.filter((message) => message.source.kind === 'tool').length;
  return `Summary of the conversation so far: ${prompts} user prompts, ${tools} tool results. The latest request was: ${quoted(context.prompt)}.`;
}

/** How much of a prompt is quoted back, characters: a huge prompt is not streamed back whole. */
const QUOTE_CHARS = 200;

/** The prompt in quotes: whole when short, else its head and how much was cut (`"…" (200 of 3,000 characters; the rest cut)`). */
function quoted(prompt: string): string {
  if (prompt.length <= QUOTE_CHARS) return `"${prompt}"`;
  // Not between the two halves of a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(prompt[QUOTE_CHARS - 1]!) ? QUOTE_CHARS - 1 : QUOTE_CHARS;
  return `"${prompt.slice(0, end)}…" (${end} of its ${prompt.length.toLocaleString('en-US')} characters; the rest cut)`;
}

/** Entries of a list_dir result: one per line, directories ending in "/"; headers and notes skipped. */
function parseListing(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('[') && !line.startsWith('(') && !line.endsWith(':'))
    .map((line) => line.replace(/^[-*]\s+/, ''));
}

function pickFile(entries: readonly string[]): string | undefined {
  const files = entries.filter((entry) => !entry.endsWith('/') && !entry.endsWith('@'));
  return files.find((entry) => /^readme/i.test(entry)) ?? files.find((entry) => /\.(md|txt)$/i.test(entry)) ?? files[0];
}

/** File lines of a read_file result, without line-number prefixes and footer notes. */
function contentLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => /^\s*\d+[\t:|]/.test(line))
    .map((line) => line.replace(/^\s*\d+[\t:|]\s?/, ''));
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? 'no details'
  );
}

/** `1 entry`, `4 entries`: the count with its noun in the right number. */
function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
