// The repository-conformance suite and the fault tests against a real Azure Blob server (Azurite), started by the tests (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';
import { faultSuite } from './storage/faults.js';

conformanceSuite('as');
faultSuite('as');
