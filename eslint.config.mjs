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
    files: ['src/**/*.ts'],
    rules: {
      'max-len': ['error', { code: 160, ignoreUrls: true }],
    },
  },
);
