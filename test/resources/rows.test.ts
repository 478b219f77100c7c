// Row collections with change capture by triggers (the default source); the suite is row-suite.ts.
import { rowSuite } from './row-suite.js';

rowSuite('triggers');
