import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mayAutoComplete } from './backend.js';

void test('the auto-complete stub is skipped only when model.py cannot define auto_complete_config', () => {
  assert.equal(
    mayAutoComplete('class TritonPythonModel:\n    def execute(self, r):\n        return []\n'),
    false,
  );
  assert.equal(mayAutoComplete('class TritonPythonModel():\n    pass\n'), false);
  assert.equal(mayAutoComplete('class TritonPythonModel(object):\n    pass\n'), false);
  assert.equal(
    mayAutoComplete(
      'class TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(c):\n        return c\n',
    ),
    true,
  );
  // A base class may bring it along; an unusual file may define the class some other way.
  assert.equal(mayAutoComplete('from lib import Base\nclass TritonPythonModel(Base):\n    pass\n'), true);
  assert.equal(mayAutoComplete('TritonPythonModel = make_model()\n'), true);
});
