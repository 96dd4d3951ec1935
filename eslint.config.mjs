// The linter: typescript-eslint's type-checked rules over the TypeScript sources, tests, bench
// and scripts. Promises are never left floating (node:test's test/describe are known safe).
// Layout is prettier's (npm run format); nothing here argues with it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // The WebAssembly kernel's Deno programs are checked by `deno check` against Deno's types.
  { ignores: ['dist/**', 'dist-vsix/**', 'node_modules/**', '**/*.mjs', '**/*.cjs', '**/*.js', 'src/sandbox/wasm/deno-kernel/**'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Control characters in patterns are the point where text from outside is cleaned.
      'no-control-regex': 'off',
      // It misreads narrowing of generic configuration unions here; the compiler decides what an assertion needs.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // JSON-RPC error codes arrive as plain numbers and are compared with the SDK's enum.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // A late-bound reference (read by closures made before its one assignment) stays a let.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests reach into untyped results (JSON-RPC, parsed files) on purpose and keep handlers async for their signature.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
);
