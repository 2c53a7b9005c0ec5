// Node module-resolution hook for hot reload (registered by module-loader.ts with module.register).
// A module imported with `?harness-gen=N` passes the same query on to the project-local files it
// imports, so a reload re-evaluates the plugin and its own helpers instead of serving them from the
// module cache. node_modules and the runtime itself stay shared: there is one runtime per process.
let runtimeDirUrl = '';

export function initialize(data) {
  runtimeDirUrl = data?.runtimeDirUrl ?? '';
}

const GEN = /[?&]harness-gen=(\d+)/;

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  const parent = context.parentURL;
  if (!parent || !result.url.startsWith('file:')) return result;
  const match = GEN.exec(parent);
  if (!match || GEN.test(result.url)) return result;
  const path = result.url.split('?')[0];
  if (path.includes('/node_modules/') || (runtimeDirUrl && path.startsWith(runtimeDirUrl))) return result;
  return { ...result, url: `${result.url}${result.url.includes('?') ? '&' : '?'}harness-gen=${match[1]}` };
}
