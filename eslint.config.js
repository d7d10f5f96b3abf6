// Typed lint for every TypeScript file of the workspace.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
);
