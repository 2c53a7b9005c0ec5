// The relative imports of the built JavaScript: every `import … from './x'`, `export … from './x'`
// and `import('./x')` with a literal specifier in dist/**/*.js must name a `.js` (`.mjs`, `.cjs`,
// `.json`) file that exists in dist/. tsc's rewriteRelativeImportExtensions misses some (a dynamic
// import inside a context-sensitive function of a generic call kept './store.ts'), and Node then
// fails at run time with ERR_MODULE_NOT_FOUND, only on the path that loads it. The build
// (scripts/build.mjs) and `npm run check:package` refuse such a dist/. The .d.ts files may keep `.ts`
// specifiers: TypeScript resolves them to the .d.ts beside them (the package test type-checks them).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ts = createRequire(import.meta.url)('typescript');

function* javascript(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* javascript(path);
    else if (/\.[cm]?js$/.test(entry.name)) yield path;
  }
}

/**
 * The bad relative imports of the JavaScript under `dist` (a folder), each as
 * `{ file, specifier, reason }` (file relative to `dist`); none when every one names a built file.
 * TypeScript's pre-processor reads the specifiers, so text in strings and comments is not taken for one.
 */
export function badDistImports(dist) {
  const root = resolve(dist, '..');
  const bad = [];
  for (const file of javascript(dist)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: specifier } of importedFiles) {
      if (!/^\.\.?\//.test(specifier)) continue;
      const target = resolve(dirname(file), specifier);
      let reason;
      if (!/\.([cm]?js|json)$/.test(specifier)) reason = 'does not end in .js';
      else if (!`${target}${sep}`.startsWith(`${root}${sep}`)) reason = 'points outside the package';
      else if (!existsSync(target) || !statSync(target).isFile()) reason = 'names no file in dist/';
      if (reason) bad.push({ file: relative(dist, file), specifier, reason });
    }
  }
  return bad;
}

/** Exits the process with code 1 and one line per bad import when `dist` has any. */
export function checkDistImports(dist) {
  const bad = badDistImports(dist);
  if (bad.length === 0) return;
  console.error(`dist/ has ${bad.length} relative import(s) Node cannot load from the installed package:`);
  for (const { file, specifier, reason } of bad) console.error(`  ${join('dist', file)}: '${specifier}' ${reason}`);
  console.error('Write the import so tsc rewrites it (a literal specifier outside generic-call callbacks), then npm run build.');
  process.exit(1);
}
