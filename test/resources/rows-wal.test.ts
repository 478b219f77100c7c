// Row collections with changes read from the WAL (PGMCP_CHANGE_SOURCE=wal) on a private logical
// cluster: the same suite as rows.test.ts (row-suite.ts).
import { rowSuite } from './row-suite.js';

rowSuite('wal');
