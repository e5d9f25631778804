// The repository-conformance suite and the fault tests against a real GCS server (fake-gcs-server), started by the tests (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';
import { faultSuite } from './storage/faults.js';

conformanceSuite('gs');
faultSuite('gs');
