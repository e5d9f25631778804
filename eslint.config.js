// Lint rules: strict async hygiene (no floating promises), no `any`, and the layer arrows of
// ARCHITECTURE.md (frontends → core → backend-api ← backends; common/ and model-config/ import nothing above).
import tseslint from 'typescript-eslint';

const layer = (dir, forbidden) => ({
  files: [`src/${dir}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: forbidden.map((f) => ({
          group: [`**/${f}/**`, `**/${f}`],
          message: `src/${dir} must not import from ${f}/ (see ARCHITECTURE.md)`,
        })),
      },
    ],
  },
});

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.venv/**',
      'examples/**/*.js',
      // Model files inside repositories are user code loaded by the javascript backend at run time (outside
      // the project's tsconfig); their behaviour is covered by the backend's integration tests.
      'examples/model_repository/**',
      'test/fixtures/**',
      '.venv-triton/**',
      'eslint.config.js',
      'bin/**',
      'bench/results/**',
      // Tools the setup scripts install (moto's virtual environment ships JavaScript of its own).
      '.cache/**',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['describe', 'it', 'test', 'suite'], package: 'node:test' },
          ],
        },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  layer('common', ['model-config', 'backend-api', 'backends', 'core', 'frontends', 'cli']),
  layer('model-config', ['backend-api', 'backends', 'core', 'frontends', 'cli']),
  layer('backend-api', ['backends', 'core', 'frontends', 'cli']),
  layer('backends', ['core', 'frontends', 'cli']),
  layer('core', ['backends', 'frontends', 'cli']),
  layer('frontends', ['backends', 'cli']),
);
