// The repository-conformance suite against local disk (test/integration/storage/).
import { conformanceSuite } from './storage/conformance.js';

conformanceSuite('local');
