// pgmcp seed <dataset>: apply migrations, then load a dataset from seeds/.
import { SEEDS_DIRECTORY, loadConfig } from '../config/index.js';
import { listDatasets } from '../db/index.js';
import type { Logger } from '../log.js';
import { openDatabase, prepareDatabase } from '../app/index.js';
import { UsageError, type CliCommand, type ParsedFlags } from './flags.js';

const HELP = `Usage: pgmcp seed <dataset>

Apply migrations, then load seeds/<dataset>/ (idempotent). Datasets: demo, conformance, bench.
`;

export const SEED_COMMAND: CliCommand = {
  name: 'seed',
  help: HELP,
  options: {},
  run: seed,
};

async function seed(flags: ParsedFlags, logger: Logger): Promise<void> {
  const datasets = await listDatasets(SEEDS_DIRECTORY);
  const [dataset] = flags.positionals;
  if (
    flags.positionals.length !== 1 ||
    dataset === undefined ||
    !datasets.includes(dataset)
  )
    throw new UsageError(`seed needs one dataset: ${datasets.join(', ')}`);
  const config = loadConfig({}, process.env);
  const open = await openDatabase(config, logger);
  try {
    await prepareDatabase(open.db, logger, { migrate: true, seed: dataset });
  } finally {
    await open.close();
  }
}
