import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NereidError } from '../../common/errors.js';
import type { ModelOptimizationPolicy } from '../../model-config/model-config.js';
import { sessionSettings } from './options.js';
import { modelConfig } from './onnxruntime.testkit.js';

const env = { cpuCount: 2, verbose: false };
const params = (p: Record<string, string>): Record<string, { string_value: string }> =>
  Object.fromEntries(Object.entries(p).map(([k, v]) => [k, { string_value: v }]));
const withInstances = (count: number): ReturnType<typeof modelConfig> => {
  const c = modelConfig({ name: 'm' });
  c.instance_group = [{ ...c.instance_group[0], count }];
  return c;
};

void test('defaults: cores split between instances, sequential, all optimisations', () => {
  const one = sessionSettings(withInstances(1), {}, env).settings;
  assert.equal(one.intraOpNumThreads, 2);
  assert.equal(one.executionMode, 'sequential');
  assert.equal(one.graphOptimizationLevel, 'all');
  assert.equal(one.interOpNumThreads, undefined);
  assert.equal(one.logSeverityLevel, 3);
  assert.equal(sessionSettings(withInstances(2), {}, env).settings.intraOpNumThreads, 1);
  assert.equal(sessionSettings(withInstances(5), {}, env).settings.intraOpNumThreads, 1);
  assert.equal(
    sessionSettings(withInstances(2), {}, { cpuCount: 8, verbose: true }).settings.intraOpNumThreads,
    4,
  );
});

void test('config parameters as Triton names them, over backend config', () => {
  const c = modelConfig({
    name: 'm',
    parameters: params({
      intra_op_thread_count: '3',
      inter_op_thread_count: '2',
      execution_mode: '1',
      enable_mem_arena: 'false',
      enable_mem_pattern: '1',
      'session.use_device_allocator_for_initializers': '1',
    }),
  });
  const s = sessionSettings(c, { intra_op_thread_count: '7' }, env).settings;
  assert.equal(s.intraOpNumThreads, 3);
  assert.equal(s.interOpNumThreads, 2);
  assert.equal(s.executionMode, 'parallel');
  assert.equal(s.enableCpuMemArena, false);
  assert.equal(s.enableMemPattern, true);
  assert.deepEqual(s.configEntries, { 'session.use_device_allocator_for_initializers': '1' });
});

void test('--backend-config thread counts apply when the model names none; 0 leaves it to ORT', () => {
  const c = modelConfig({ name: 'm' });
  assert.equal(sessionSettings(c, { intra_op_thread_count: '5' }, env).settings.intraOpNumThreads, 5);
  assert.equal(sessionSettings(c, { intra_op_thread_count: '0' }, env).settings.intraOpNumThreads, 0);
  assert.equal(sessionSettings(c, { inter_op_thread_count: '0' }, env).settings.interOpNumThreads, undefined);
});

void test('optimization.graph.level maps like Triton: -1 basic, 1 extended, 2 disabled, else all', () => {
  const level = (l: number | undefined): string => {
    const c = modelConfig({ name: 'm' });
    if (l !== undefined) c.optimization = { graph: { level: l } } as ModelOptimizationPolicy;
    return sessionSettings(c, {}, env).settings.graphOptimizationLevel;
  };
  assert.equal(level(-1), 'basic');
  assert.equal(level(1), 'extended');
  assert.equal(level(2), 'disabled');
  assert.equal(level(0), 'all');
  assert.equal(level(undefined), 'all');
});

void test('bad values are INVALID_ARG naming the key', () => {
  const bad = (p: Record<string, string>, key: string): void =>
    assert.throws(
      () => sessionSettings(modelConfig({ name: 'm', parameters: params(p) }), {}, env),
      (e: NereidError) => e.code === 'INVALID_ARG' && e.message.includes(key),
    );
  bad({ execution_mode: '2' }, 'execution_mode');
  bad({ intra_op_thread_count: 'many' }, 'intra_op_thread_count');
  bad({ inter_op_thread_count: '-1' }, 'inter_op_thread_count');
  bad({ enable_mem_arena: 'perhaps' }, 'enable_mem_arena');
  bad({ execution_thread: 'main' }, 'execution_thread');
});

void test('execution_thread: worker threads unless the model asks for the event loop', () => {
  const thread = (p: Record<string, string>): string =>
    sessionSettings(modelConfig({ name: 'm', parameters: params(p) }), {}, env).executionThread;
  assert.equal(thread({}), 'worker');
  assert.equal(thread({ execution_thread: 'worker' }), 'worker');
  assert.equal(thread({ execution_thread: ' event_loop ' }), 'event_loop');
});

void test('--backend-config=onnxruntime,execution_thread sets the thread of models that name none', () => {
  const thread = (p: Record<string, string>, backend: Record<string, string>): string =>
    sessionSettings(modelConfig({ name: 'm', parameters: params(p) }), backend, env).executionThread;
  assert.equal(thread({}, { execution_thread: 'event_loop' }), 'event_loop');
  assert.equal(thread({ execution_thread: 'worker' }, { execution_thread: 'event_loop' }), 'worker');
  assert.equal(thread({ execution_thread: 'event_loop' }, { execution_thread: 'worker' }), 'event_loop');
  assert.throws(
    () => sessionSettings(modelConfig({ name: 'm' }), { execution_thread: 'main' }, env),
    (e: NereidError) =>
      e.code === 'INVALID_ARG' && e.message.includes('--backend-config') && e.message.includes("'main'"),
  );
});

void test('accepted-but-ignored settings come back as warnings', () => {
  const { warnings } = sessionSettings(modelConfig({ name: 'm' }), { 'enable-global-threadpool': '1' }, env);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /enable-global-threadpool/);
});
