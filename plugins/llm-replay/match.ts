/** Placeholders of imported sessions (DeepSeek Harness records `{{tools}}`, `{{system}}`, `{{cwd}}`, `{{sessionId}}`). */
const PLACEHOLDER = /\{\{[^{}]*\}\}/;

/**
 * True when `actual` matches `recorded`: equal, or `recorded` is a string whose each `{{…}}` matches
 * anything (a string that is one placeholder matches any value, also a non-string: `{{tools}}` stands
 * for the whole tool list).
 */
export function matchesRecorded(recorded: unknown, actual: unknown): boolean {
  if (typeof recorded === 'string' && PLACEHOLDER.test(recorded)) {
    if (typeof actual !== 'string') return /^\{\{[^{}]*\}\}$/.test(recorded);
    const pattern = recorded
      .split(/(\{\{[^{}]*\}\})/)
      .map((part) => (PLACEHOLDER.test(part) ? '[\\s\\S]*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    return new RegExp(`^${pattern}$`).test(actual);
  }
  return recorded === actual;
}
