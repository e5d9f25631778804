// The repository-conformance suite against a real azure server started by the test (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';

conformanceSuite('as');
