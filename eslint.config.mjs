// Lint: typescript-eslint's recommended rules, plus the architecture rules that used to be prose: no file import
// cycles, and the layer order of src (`local/layers`, written once in scripts/eslint-layers.mjs: src/core's rooms
// import only lower rooms, the core nothing of its faces, only src/extension imports `vscode`).
// Run by `npm run lint` (part of `npm test`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import layers from './scripts/eslint-layers.mjs';

export default tseslint.config(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', '.tmp/**', 'test-results/**', 'media/**', 'src/sim/python/**', 'src/sim/bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    languageOptions: { parserOptions: { ecmaVersion: 2022, sourceType: 'module' } },
    rules: {
      // The node is semi-trusted: sanitizers and parsers match control bytes on purpose.
      'no-control-regex': 'off',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      'max-len': [
        'error',
        {
          code: 140,
          ignoreUrls: true,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
          ignoreComments: false,
        },
      ],
    },
  },
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: { ...globals.node } } },
  { files: ['**/*.ts'], rules: { 'no-undef': 'off' } },
  { files: ['src/**/*.ts'], plugins: { local: layers }, rules: { 'local/layers': 'error' } },
);
