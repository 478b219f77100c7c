// `npm run bench:docs`: rewrite the results in docs/benchmarks.md and README from
// bench/results/latest.json without running the bench (`npm run bench` does this after a run).
import path from 'node:path';
import { PROJECT_ROOT } from '../src/version.js';
import { readSummary, writeBenchDocs } from './report.js';

const file = path.join(PROJECT_ROOT, 'bench', 'results', 'latest.json');
writeBenchDocs(readSummary(file), PROJECT_ROOT);
process.stdout.write(
  `docs/benchmarks.md and README.md written from ${path.relative(PROJECT_ROOT, file)}\n`,
);
