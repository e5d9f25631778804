// The repository-conformance suite against a real gs server started by the test (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';

conformanceSuite('gs');
