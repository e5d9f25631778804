// The repository-conformance suite and the fault tests against a real S3 server (moto_server), started by the tests (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';
import { faultSuite } from './storage/faults.js';

conformanceSuite('s3');
faultSuite('s3');
