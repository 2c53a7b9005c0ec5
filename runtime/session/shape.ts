/**
 * Shape checks of core event records (DESIGN "Sessions and the journal": a bad line is
 * `JOURNAL_CORRUPT` naming the file and line). A line can be well-formed JSON with a valid envelope
 * and still have data of the wrong shape (`"data": null`, a `turn` that is a string, a message
 * without `content`); the fold, the repair and the readers would then fail on it with an uncoded
 * `TypeError`. These checks look at what those readers use — field presence and primitive types,
 * one level into messages and chunks — with `typeof` tests only (they run for every chunk read).
 * Unknown (plugin) event types are not checked here: their reducers own their data.
 */

type Check = (data: Record<string, unknown>) => string | undefined;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const num =
  (key: string, optional = false): Check =>
  (data) =>
    (optional && data[key] === undefined) || (typeof data[key] === 'number' && Number.isFinite(data[key])) ? undefined : `"${key}" is not a number`;
const str =
  (key: string, optional = false): Check =>
  (data) =>
    (optional && data[key] === undefined) || typeof data[key] === 'string' ? undefined : `"${key}" is not a string`;
const obj =
  (key: string, optional = false): Check =>
  (data) =>
    (optional && data[key] === undefined) || isObject(data[key]) ? undefined : `"${key}" is not an object`;

function messageProblem(value: unknown, key: string): string | undefined {
  if (!isObject(value)) return `"${key}" is not a message object`;
  if (typeof value.role !== 'string') return `"${key}.role" is not a string`;
  if (!Array.isArray(value.content)) return `"${key}.content" is not an array`;
  for (let i = 0; i < value.content.length; i++) {
    const block = value.content[i] as unknown;
    if (!isObject(block) || typeof block.type !== 'string') return `"${key}.content[${i}]" is not a content block (an object with a string "type")`;
  }
  return undefined;
}

const message =
  (key: string): Check =>
  (data) =>
    messageProblem(data[key], key);

const chunk: Check = (data) => (isObject(data.chunk) && typeof data.chunk.type === 'string' ? undefined : '"chunk" is not a stream chunk (an object with a string "type")');

const messages: Check = (data) => {
  if (!Array.isArray(data.messages)) return '"messages" is not an array';
  for (let i = 0; i < data.messages.length; i++) {
    const problem = messageProblem(data.messages[i], `messages[${i}]`);
    if (problem !== undefined) return problem;
  }
  return undefined;
};

const finish: Check = (data) => (isObject(data.finish) && typeof data.finish.kind === 'string' ? undefined : '"finish" is not a finish reason (an object with a string "kind")');

const turnStep = [num('turn'), num('step')];

const SHAPES: Record<string, readonly Check[]> = {
  'turn/start': [num('turn'), obj('trace', true)],
  'turn/end': [num('turn'), str('reason'), obj('failure', true)],
  'step/start': turnStep,
  'step/end': turnStep,
  'user/message': [num('turn', true), message('message')],
  'request/header': [obj('header'), (data) => (isObject(data.header) && isObject(data.header.config) ? undefined : '"header.config" is not an object')],
  'assistant/chunk': [...turnStep, chunk],
  'assistant/message': [...turnStep, message('message'), finish, obj('usage', true)],
  'tool/call': [...turnStep, str('callId'), str('name'), str('arguments')],
  'approval/decided': [...turnStep, str('callId'), str('decision')],
  'tool/start': [...turnStep, str('callId')],
  'tool/output': [...turnStep, str('callId'), str('text')],
  'tool/result': [...turnStep, str('callId'), message('message')],
  'llm/retry': [...turnStep, num('attempt'), num('delayMs'), obj('failure')],
  'surface/replace': [num('start'), num('end'), messages],
  'compaction/start': [str('trigger'), num('messageCount')],
  'compaction/summary': [str('summary'), str('provider'), str('model'), obj('usage', true)],
  'compaction/end': [str('outcome'), obj('failure', true)],
  'session/title': [str('title')],
  'plugin/reload': [str('action'), str('outcome'), str('name', true), num('generation', true), num('turn', true), num('step', true), obj('failure', true)],
};

/**
 * Why the data of a core event has the wrong shape, or undefined when it is fine (or the type is not
 * a core one). The reason names the type and the field: `"data" of turn/start: "turn" is not a number`.
 */
export function shapeProblem(type: string, data: unknown): string | undefined {
  const checks = SHAPES[type];
  if (checks === undefined) return undefined;
  if (!isObject(data)) return `"data" of ${type} is ${data === null ? 'null' : Array.isArray(data) ? 'an array' : `a ${typeof data}`}, not an object`;
  for (let i = 0; i < checks.length; i++) {
    const problem = checks[i]!(data);
    if (problem !== undefined) return `"data" of ${type}: ${problem}`;
  }
  return undefined;
}
