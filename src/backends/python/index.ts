/** Public face of the python backend: what the composition root and tests import. */
export { PythonBackend, mayAutoComplete } from './backend.js';
export { PythonInstance } from './instance.js';
export { chooseInterpreter, PACKAGE_ROOT, STUB_SCRIPT, type Interpreter } from './interpreter.js';
export { pythonBackendOptions, DEFAULT_SHM_THRESHOLD, type PythonBackendOptions } from './options.js';
export {
  PythonBasedBackend,
  PythonBasedBackends,
  backendPackageName,
  chooseBackendInterpreter,
  findBackendFolder,
  runtimeScript,
  type PythonBasedOptions,
} from './python-based.js';
export {
  BUNDLED_BACKENDS_DIR,
  INSTALLED_MARKER,
  REQUIREMENTS_FILE,
  VENV_ROOT_ENV,
  backendVenv,
  backendVenvRoot,
  installCommand,
  isInstalled,
  requirementsKey,
  venvForBackend,
  type BackendVenv,
} from './backend-venv.js';
