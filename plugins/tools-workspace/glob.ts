/**
 * A small glob matcher for grep's `glob` filter: `*` (within a segment), `**` (any number of
 * segments), `?`, `[...]` classes and `{a,b}` alternatives. A glob without `/` matches a file's name
 * anywhere (`*.ts`); one with `/` matches the path relative to the searched directory.
 */
export function globMatcher(glob: string): (relPath: string) => boolean {
  const regex = new RegExp(`^${globToRegex(glob)}$`);
  if (glob.includes('/')) {
    const anchored = glob.startsWith('/') ? new RegExp(`^${globToRegex(glob.slice(1))}$`) : regex;
    return (relPath) => anchored.test(relPath);
  }
  return (relPath) => regex.test(relPath.slice(relPath.lastIndexOf('/') + 1));
}

function globToRegex(glob: string): string {
  let out = '';
  let braceDepth = 0;
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i]!;
    if (char === '*') {
      if (glob[i + 1] === '*') {
        // `**/` matches zero or more whole segments; a trailing `**` matches everything below.
        const slashFollows = glob[i + 2] === '/';
        out += slashFollows ? '(?:[^/]*(?:/|$))*' : '.*';
        i += slashFollows ? 2 : 1;
      } else out += '[^/]*';
    } else if (char === '?') out += '[^/]';
    else if (char === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close === -1) out += '\\[';
      else {
        let body = glob.slice(i + 1, close).replace(/\\/g, '\\\\');
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        out += `[${body}]`;
        i = close;
      }
    } else if (char === '{') {
      braceDepth += 1;
      out += '(?:';
    } else if (char === '}' && braceDepth > 0) {
      braceDepth -= 1;
      out += ')';
    } else if (char === ',' && braceDepth > 0) out += '|';
    else if (char === '\\' && i + 1 < glob.length) {
      out += escapeRegex(glob[i + 1]!);
      i += 1;
    } else out += escapeRegex(char);
  }
  return out + ')'.repeat(braceDepth);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
