/** Public face of the python backend: what the composition root and tests import. */
export { PythonBackend, mayAutoComplete } from './backend.js';
export { PythonInstance } from './instance.js';
export { chooseInterpreter, PACKAGE_ROOT, STUB_SCRIPT, type Interpreter } from './interpreter.js';
export { pythonBackendOptions, DEFAULT_SHM_THRESHOLD, type PythonBackendOptions } from './options.js';
