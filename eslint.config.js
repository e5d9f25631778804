// Lint rules: strict async hygiene (no floating promises), no `any`, and the layers of docs/architecture.md.
// Every folder of src/ (and src/index.ts) is a layer with the list of layers it may import; anything else is
// an error. The import-cycle check is dependency-cruiser's (.dependency-cruiser.json, also in `npm run lint`).
import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

/** Every layer of src/, and the layers each may import (besides itself). */
const LAYERS = {
  common: [],
  'model-config': ['common'],
  'backend-api': ['common', 'model-config'],
  // The model authors' SDK is a leaf: it is loaded into JavaScript model workers and published as nereid-server/sdk.
  sdk: ['common'],
  // The client talks to any Triton server: nothing of the server, only the shared leaves. model-config is the
  // ModelConfig message (Triton's model_config.proto, shared by Triton's own client and server the same way).
  client: ['common', 'model-config'],
  core: ['common', 'model-config', 'backend-api'],
  backends: ['common', 'model-config', 'backend-api', 'sdk'],
  frontends: ['common', 'model-config', 'backend-api', 'core'],
  // The composition, shared by the two entry points below: options → backends, core and frontends.
  compose: ['common', 'model-config', 'backend-api', 'core', 'backends', 'frontends'],
  // The two entry points: the `nereid` command (the only reader of argv and env) and the embedding API.
  cli: ['common', 'compose'],
  embedded: ['common', 'model-config', 'core', 'frontends', 'sdk', 'compose'],
};
// A folder added to src/ without a line above would escape the layer rules: refuse to lint until it has one.
const unlisted = readdirSync(new URL('./src', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !Object.hasOwn(LAYERS, entry.name))
  .map((entry) => `src/${entry.name}/`);
if (unlisted.length > 0) {
  throw new Error(`eslint.config.js: ${unlisted.join(', ')} not in LAYERS; give each its allowed imports`);
}

/** src/index.ts, the package's entry: the embedding API, the SDK and the composition, with their types. */
const INDEX_IMPORTS = ['common', 'core', 'sdk', 'compose', 'embedded'];

/**
 * The core has a face: outside src/core/, only these modules of it may be imported — index.ts (the server
 * API and its types: frontends, the embedding API, the package entry) and assembly.ts (its parts, for the
 * composition root). A layer that may import core and is not listed here gets index.ts only.
 */
const CORE_FACES = {
  compose: ['index.js', 'assembly.js'],
};
const coreFaces = (self) => CORE_FACES[self] ?? ['index.js'];

const restrict = (files, who, allowed, self, extra = [], faces = coreFaces(self)) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          ...Object.keys(LAYERS)
            .filter((layer) => layer !== self && !allowed.includes(layer))
            .map((layer) => ({
              group: [`**/${layer}/**`, `**/${layer}`, `./${layer}/**`],
              message: `${who} must not import from src/${layer}/ (layers: docs/architecture.md)`,
            })),
          ...(self !== 'core' && allowed.includes('core')
            ? [
                {
                  group: [
                    '**/core/**',
                    './core/**',
                    ...faces.flatMap((f) => [`!**/core/${f}`, `!./core/${f}`]),
                  ],
                  message: `${who} must import the core through its face (${faces.map((f) => `src/core/${f.replace(/js$/, 'ts')}`).join(', ')}), not its inner modules (docs/architecture.md)`,
                },
              ]
            : []),
          ...extra,
        ],
      },
    ],
  },
});

/**
 * Inside a frontend, the transport (src/frontends/<f>/transport/: sockets, framing, limits, the protocol's
 * status codes) sits below the translators beside it (routes and rpcs ↔ core calls): they may use it, it
 * may not reach up to them. Its own folder, the frontends' shared helpers (../../) and the layers below.
 * (Given with the frontends' layer patterns: one no-restricted-imports setting per file counts.) Its tests
 * may run it behind the whole frontend.
 */
const TRANSPORT_UP = {
  regex: '^\\.\\./[^.]',
  message: "a frontend's transport/ must not import the translators beside it (layers: docs/architecture.md)",
};

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
  {
    // The dashboard's browser modules (plain JavaScript, JSDoc-typed, checked by dashboard/tsconfig.json)
    // walk the v2 API's JSON documents, typed `any` at the fetch; every value read from them is rendered
    // as text or checked where it matters, so the unsafe-any family would only add casts, not safety.
    files: ['dashboard/**/*.js'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Plain Node scripts (scripts/*.mjs) are outside the tsconfig: linted without type information.
    files: ['scripts/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { console: 'readonly', process: 'readonly' },
    },
  },
  ...Object.entries(LAYERS).map(([layer, allowed]) =>
    restrict([`src/${layer}/**/*.ts`], `src/${layer}`, allowed, layer),
  ),
  {
    ...restrict(['src/frontends/*/transport/**/*.ts'], 'src/frontends', LAYERS.frontends, 'frontends', [
      TRANSPORT_UP,
    ]),
    // A transport's tests may run it behind the whole frontend (a real server answering real sockets).
    ignores: ['src/frontends/*/transport/**/*.test.ts'],
  },
  restrict(['src/index.ts'], 'src/index.ts', INDEX_IMPORTS, undefined),
  // The frontends' tests may build real statistics (assembly.ts) where a model version would keep them.
  restrict(
    ['src/frontends/**/*.test.ts', 'src/frontends/**/*.testkit.ts'],
    'src/frontends',
    LAYERS.frontends,
    'frontends',
    [],
    ['index.js', 'assembly.js'],
  ),
);
