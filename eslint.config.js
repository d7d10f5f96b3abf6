// Typed lint for every TypeScript file of the workspace.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Package boundaries (issue 26): a workspace package reaches another only through that package's
// `exports` (`@svc/<name>` or a subpath it lists), never by a relative path that leaves its own
// directory nor by a path into another package's files (`@svc/<name>/src/...`). A file d folders
// below packages/<name>/ (or bench/) leaves its package with d + 1 `../`; elsewhere (test/,
// packaging/, the root) a relative path into packages/ or bench/ is the deep import. spec/ is the
// generated contract (JSON data), which any package may read. The same rule for every file, tests
// included: a test imports its own package's internals, another package's only through its exports
// (`@svc/<name>/testing` where one offers helpers). test/package-boundaries.test.ts proves the rule
// fires and checks dynamic imports and the package graph, which a lint rule does not see.
const CODE = '{ts,tsx,js,mjs,cjs,mts,cts}';
const INTO_PACKAGE_FILES = {
  regex: '^@svc/[^/]+/(src|test|bin|build|scripts|dist|node_modules)/',
  message:
    "Import another package through its exports (`@svc/<name>` or a subpath in its package.json 'exports'), not its files.",
};
const LEAVES_PACKAGE =
  "A relative import may not leave its package: import the other package through its exports (`@svc/<name>`), adding it to this package's dependencies.";
const boundaries = (files, leaving) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      { patterns: [{ regex: leaving, message: LEAVES_PACKAGE }, INTO_PACKAGE_FILES] },
    ],
  },
});
const packageBoundaries = [
  boundaries([`**/*.${CODE}`], '^(\\.\\./)+(packages|bench)/'),
  ...Array.from({ length: 12 }, (_, depth) => [
    boundaries([`bench/${'*/'.repeat(depth)}*.${CODE}`], `^(\\.\\./){${depth + 1}}(?!spec/)`),
    boundaries([`packages/*/${'*/'.repeat(depth)}*.${CODE}`], `^(\\.\\./){${depth + 1}}(?!\\.\\./spec/)`),
  ]).flat(),
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'work/**', 'clients/*/**/*', '!clients/*/*.test.ts', 'bench/out/**', 'coverage/**', 'packages/*/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
    },
  },
  // Sizes a reader can hold (issue 26): a source function fits on a few screens, a daemon module is
  // one concern. Tests and generated declarative tables (spec vectors) are not held to them.
  {
    files: ['packages/*/src/**/*.{ts,tsx}', 'packages/*/bin/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.test.tsx'],
    rules: {
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['packages/daemon/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'max-lines': ['error', { max: 500 }] },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
  ...packageBoundaries,
);
