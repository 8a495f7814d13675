// Lint rules for `npm run lint` (with knip, see knip.json). Kept to typescript-eslint's recommended
// set plus the line length: the compiler (strict, noUnusedLocals) already checks the rest.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.venv/**', '.tmp/**', '.ci/**', 'test-artifacts/**', 'dashboards/json/**', '**/*.js', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mjs'],
    rules: {
      // No `any` at module boundaries: a value from outside is `unknown` until it is checked.
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Kubernetes manifests rendered by helm/kustomize, read field by field inside one test file.
    files: ['test/integration/install-kubernetes*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Type-aware rules, on every file a tsconfig covers (the project service picks the nearest one:
    // src/status-page/browser/ has its own, with the DOM). A promise nobody awaits loses its rejection
    // (an unhandled rejection ends the process) and its ordering; a fire-and-forget call says so with
    // `void` and a comment where its errors are handled.
    files: ['{src,scripts,mixin,bench,test,dashboards}/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-len': ['error', { code: 160, ignoreUrls: true }],
    },
  },
);
