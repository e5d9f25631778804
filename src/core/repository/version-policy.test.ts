import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectVersions } from './version-policy.js';

void test('default policy is latest 1', () => {
  assert.deepEqual(selectVersions(undefined, [1, 3, 2]), { load: [3], missing: [] });
  assert.deepEqual(selectVersions({}, [1, 3, 2]), { load: [3], missing: [] });
  assert.deepEqual(selectVersions({}, []), { load: [], missing: [] });
});

void test('latest N keeps the N highest versions', () => {
  assert.deepEqual(selectVersions({ latest: { num_versions: 2 } }, [0, 5, 1, 9]).load, [5, 9]);
  assert.deepEqual(selectVersions({ latest: { num_versions: 10 } }, [2, 1]).load, [1, 2]);
  assert.deepEqual(selectVersions({ latest: { num_versions: 0 } }, [2, 1]).load, []);
});

void test('all loads every version folder', () => {
  assert.deepEqual(selectVersions({ all: {} }, [3, 0, 1]).load, [0, 1, 3]);
});

void test('specific loads the named versions that exist and reports the missing ones', () => {
  assert.deepEqual(selectVersions({ specific: { versions: [3, 1, 7, 1] } }, [1, 2, 3]), {
    load: [1, 3],
    missing: [7],
  });
  assert.deepEqual(selectVersions({ specific: { versions: [4] } }, [1]), { load: [], missing: [4] });
});
