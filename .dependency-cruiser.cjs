/**
 * The layout rules of DESIGN "Layout", checked by dependency-cruiser (`npm run check:architecture`
 * runs it together with what no tool checks: see scripts/check-architecture.ts).
 *
 *   runtime/  the kernel and runtime: imports only runtime/ and npm packages
 *   cli/      the `harness` command: may import anything but test/ and bench/
 *   plugins/  one folder per plugin: the public entry runtime/index.ts, its own folder, npm packages
 *             (its tests, *.test.ts, may also use testing/)
 *   testing/  `<pkg>/testing`: the public entry and plugins, like a plugin author's own tests
 *   stack/    `<pkg>/stack`, the built-in plugin stack: the public entry and plugins
 *   cookbook/ examples a user would write: the public entry and plugins
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'An import cycle (type-only imports included) blurs the layering kernel ← llm ← session ← agent ← public entry.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'runtime-imports-only-runtime',
      severity: 'error',
      comment: 'The runtime knows no plugin, no CLI, no test helper: it imports runtime/ files and npm packages only.',
      from: { path: '^runtime/' },
      to: { path: '^(plugins|cli|testing|test|bench|cookbook)/|^harness\\.config\\.ts$' },
    },
    {
      name: 'plugin-imports-public-entry',
      severity: 'error',
      comment: 'A plugin imports the runtime only through its public entry runtime/index.ts (internal.ts and deep paths are not a contract).',
      from: { path: '^plugins/' },
      to: { path: '^runtime/', pathNot: '^runtime/index\\.ts$' },
    },
    {
      name: 'plugin-stays-in-its-folder',
      severity: 'error',
      comment: "A plugin is its own package folder: besides the public entry it imports its own files and npm packages, never the CLI, the suite, another plugin's files or the cookbook.",
      from: { path: '^plugins/([^/]+)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^(cli|test|testing|bench|cookbook)/|^plugins/', pathNot: '^plugins/$1/' },
    },
    {
      name: 'plugin-test-uses-testing',
      severity: 'error',
      comment: "A plugin's own tests use what a plugin author has: the public entry, testing/, the plugin's folder (not the suite's helpers in test/).",
      from: { path: '^plugins/([^/]+)/.*\\.test\\.ts$' },
      to: { path: '^(cli|test|bench|cookbook)/|^plugins/', pathNot: '^plugins/$1/' },
    },
    {
      name: 'testing-uses-public-entry',
      severity: 'error',
      comment: 'testing/ and stack/ ship as <pkg>/testing and <pkg>/stack: they may use the public entry and the shipped plugins, not runtime internals, the CLI or the suite.',
      from: { path: '^(testing|stack)/' },
      to: { path: '^(cli|test|bench|cookbook)/|^runtime/', pathNot: '^runtime/index\\.ts$' },
    },
    {
      name: 'cookbook-uses-public-entry',
      severity: 'error',
      comment: 'A cookbook example is what a user would write: the public entry and the shipped plugins, not runtime internals or the CLI.',
      from: { path: '^cookbook/', pathNot: '\\.test\\.ts$' },
      to: { path: '^(cli|test|bench)/|^runtime/', pathNot: '^runtime/index\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|^dist/|^test/\\.tmp-|^\\.scratch/' },
    // Type-only imports count: a cycle or a forbidden import through `import type` is still one.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
