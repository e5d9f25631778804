// The repository-conformance suite against a real s3 server started by the test (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';

conformanceSuite('s3');
