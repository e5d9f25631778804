/**
 * Fuzz targets for the model configuration pipeline: config.pbtxt text (the repository's files) and the
 * JSON form (the `config` parameter of a load request) through parse → normalize → validate → freeze →
 * Triton's JSON, plus two round-trips: the text and JSON readers agree on the same generated config, and a
 * validated config printed as Triton's JSON reads back to the same JSON.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  freezeModelConfig,
  modelConfigToJson,
  normalizeModelConfig,
  parseModelConfigJson,
  parseModelConfigText,
  validateModelConfig,
  MODEL_CONFIG,
  messageDescriptor,
  type ModelConfig,
  type NormalizeOptions,
} from '../../../src/model-config/index.js';
import { hostileString, jsonOps, mutateNode, mutatedText, render, toNode } from '../arbitraries.js';
import { target, type CaseContext, type FuzzTarget } from '../harness.js';
import {
  PBTXT_VOCABULARY,
  Tape,
  messageArb,
  messageJson,
  messageText,
  modelConfigArb,
  seedConfigs,
  tapeArb,
} from '../model-config-gen.js';

const CONFIG = messageDescriptor(MODEL_CONFIG);
const SEEDS = seedConfigs();

/** What the model loader passes to normalize() (cli → loader), or nothing. */
const NORMALIZE_OPTIONS: readonly NormalizeOptions[] = [
  {},
  { backend: 'onnxruntime', defaultPlatform: 'onnxruntime_onnx', defaultModelFilename: 'model.onnx' },
  { backend: 'python', defaultModelFilename: 'model.py' },
  { modelName: 'm', versionFiles: ['model.onnx'], preferredInstanceGroups: [{ kind: 'KIND_CPU', count: 2 }] },
];

/**
 * The rest of the pipeline after a reader accepted a config, as the loader runs it. Once validate() has
 * accepted a config, freezing it and printing Triton's JSON must not fail, and that JSON must read back
 * (as a load request's config) to the same JSON.
 */
function pipeline(config: ModelConfig, optionsIndex: number, ctx: CaseContext): void {
  const normalized = ctx.attempt('normalizeModelConfig', () =>
    normalizeModelConfig(config, NORMALIZE_OPTIONS[optionsIndex % NORMALIZE_OPTIONS.length]),
  );
  if (normalized === undefined) return;
  const valid = ctx.attempt('validateModelConfig', () => {
    validateModelConfig(normalized);
    return true;
  });
  if (valid === undefined) return;
  ctx.note('valid config');
  const json = modelConfigToJson(freezeModelConfig(normalized));
  const text = JSON.stringify(json);
  const again = parseModelConfigJson(text, 'round-trip');
  const normalizedAgain = normalizeModelConfig(again);
  validateModelConfig(normalizedAgain);
  assert.deepEqual(modelConfigToJson(freezeModelConfig(normalizedAgain)), json, 'config JSON round-trip');
}

const deepNesting = fc
  .tuple(
    fc.constantFrom(
      'optimization { cuda { graph_spec { ',
      'input [ { ',
      'parameters { key: "a" value { ',
      '{ ',
    ),
    fc.integer({ min: 50, max: 3000 }),
  )
  .map(([open, n]) => open.repeat(n));

const pbtxtText = fc.oneof(
  // Real configs, edited at the text level.
  { arbitrary: mutatedText(fc.constantFrom(...SEEDS), PBTXT_VOCABULARY, 4), weight: 4 },
  // Generated configs in every syntax, sometimes edited.
  {
    arbitrary: fc
      .tuple(
        fc.oneof(modelConfigArb({ inRange: false }), messageArb('ModelConfig', { inRange: false })),
        tapeArb,
      )
      .map(([m, tape]) => messageText(CONFIG, m, new Tape(tape))),
    weight: 3,
  },
  {
    arbitrary: mutatedText(
      fc
        .tuple(modelConfigArb({ inRange: false }), tapeArb)
        .map(([m, tape]) => messageText(CONFIG, m, new Tape(tape))),
      PBTXT_VOCABULARY,
      2,
    ),
    weight: 3,
  },
  // Token soup and raw strings.
  {
    arbitrary: fc.array(fc.constantFrom(...PBTXT_VOCABULARY), { maxLength: 40 }).map((t) => t.join(' ')),
    weight: 1,
  },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 60 }), weight: 1 },
  { arbitrary: deepNesting, weight: 1 },
);

export const pbtxtConfig = target({
  name: 'pbtxt-config',
  what: 'config.pbtxt text → parseModelConfigText → normalize → validate → freeze → JSON (→ read back)',
  weight: 12,
  arbitrary: fc.tuple(pbtxtText, fc.nat()),
  run([text, options], ctx) {
    const config = ctx.attempt('parseModelConfigText', () => parseModelConfigText(text, 'config.pbtxt'));
    if (config !== undefined) pipeline(config, options, ctx);
  },
});

/** A generated config as protobuf JSON text, as a load request carries it, then edited as JSON. */
const configJsonText = fc.oneof(
  {
    arbitrary: fc
      .tuple(
        fc.oneof(
          { arbitrary: modelConfigArb({ inRange: false }), weight: 3 },
          { arbitrary: messageArb('ModelConfig', { inRange: false }), weight: 1 },
        ),
        tapeArb,
        jsonOps(2),
      )
      .map(([m, tape, ops]) => render(mutateNode(toNode(messageJson(CONFIG, m, new Tape(tape))), ops))),
    weight: 6,
  },
  {
    arbitrary: mutatedText(
      fc
        .tuple(modelConfigArb({ inRange: false }), tapeArb)
        .map(([m, tape]) => JSON.stringify(messageJson(CONFIG, m, new Tape(tape)))),
      ['{', '}', '[', ']', ',', ':', '"', 'null', 'true', '1e400', '-1', '"__proto__"', '"input"', '"dims"'],
      3,
    ),
    weight: 3,
  },
  { arbitrary: hostileString, weight: 1 },
  { arbitrary: fc.integer({ min: 90, max: 5000 }).map((n) => '{"input":' + '['.repeat(n)), weight: 1 },
);

export const configJson = target({
  name: 'config-json',
  what: "a load request's config JSON → parseModelConfigJson → normalize → validate → freeze → JSON",
  weight: 8,
  arbitrary: fc.tuple(configJsonText, fc.nat()),
  run([text, options], ctx) {
    const config = ctx.attempt('parseModelConfigJson', () => parseModelConfigJson(text, 'config override'));
    if (config !== undefined) pipeline(config, options, ctx);
  },
});

export const configReadersAgree = target({
  name: 'config-readers-agree',
  what: 'one generated config as pbtxt and as JSON: both readers accept it and read the same ModelConfig',
  weight: 5,
  arbitrary: fc.tuple(
    fc.oneof(modelConfigArb({ inRange: true }), messageArb('ModelConfig', { inRange: true })),
    tapeArb,
  ),
  run([m, tape]) {
    const text = messageText(CONFIG, m, new Tape(tape));
    const json = JSON.stringify(messageJson(CONFIG, m, new Tape(tape)));
    const fromText = parseModelConfigText(text, 'config.pbtxt');
    const fromJson = parseModelConfigJson(json, 'config override');
    assert.deepStrictEqual(fromText, fromJson);
  },
});

export const MODEL_CONFIG_TARGETS: readonly FuzzTarget<unknown>[] = [
  pbtxtConfig,
  configJson,
  configReadersAgree,
];
