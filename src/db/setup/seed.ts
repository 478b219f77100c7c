// Loads a dataset from seeds/<dataset>/: ordered SQL files, the same ones the tests load.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';

const SEED_FILE = /^\d{2,4}_[a-z0-9_]+\.sql$/;
/** A file whose first line is `-- pgmcp:batches N` runs N times with $1 = 0..N-1 (one statement). */
const BATCHES_HEADER = /^--\s*pgmcp:batches\s+(\d+)\s*$/m;

export interface SeedProgress {
  /** Called after each step; `done` reaches `total` at the end. */
  (done: number, total: number, label: string): void;
}

/** The datasets seeds/ offers (its subfolders). */
export async function listDatasets(seedsDirectory: string): Promise<string[]> {
  const entries = await readdir(seedsDirectory, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** A dataset by name, in the folder that holds the datasets. */
export interface SeedDataset {
  readonly seedsDirectory: string;
  readonly dataset: string;
}

/**
 * Apply a dataset's files in name order, each in its own transaction. Seeds are idempotent
 * (they upsert or skip existing rows), so loading twice changes nothing.
 */
export async function loadSeed(
  client: pg.Client,
  { seedsDirectory, dataset }: SeedDataset,
  progress: SeedProgress,
): Promise<void> {
  const available = await listDatasets(seedsDirectory);
  if (!available.includes(dataset)) {
    throw new Error(
      `unknown dataset "${dataset}"; available: ${available.join(', ')}`,
    );
  }
  const directory = path.join(seedsDirectory, dataset);
  const files = (await readdir(directory))
    .filter((file) => SEED_FILE.test(file))
    .sort();
  const steps = await Promise.all(
    files.map(async (file) => {
      const text = await readFile(path.join(directory, file), 'utf8');
      const batches = BATCHES_HEADER.exec(text.split('\n', 1)[0] ?? '');
      return {
        file,
        text,
        batches: batches === null ? null : Number(batches[1]),
      };
    }),
  );
  const total = steps.reduce((sum, step) => sum + (step.batches ?? 1), 0);
  let done = 0;
  for (const step of steps) {
    await client.query('begin');
    try {
      if (step.batches === null) {
        await client.query(step.text);
        done += 1;
        progress(done, total, step.file);
      } else {
        for (let batch = 0; batch < step.batches; batch += 1) {
          await client.query(step.text, [batch]);
          done += 1;
          progress(done, total, step.file);
        }
      }
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      throw new Error(
        `seed ${dataset}/${step.file} failed: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
  }
  await client.query(
    'insert into pgmcp.seed_runs (dataset) values ($1) on conflict (dataset) do update set loaded_at = now()',
    [dataset],
  );
}

/** Whether `dataset` was loaded into this database before. */
export async function seedLoaded(
  client: pg.Client,
  dataset: string,
): Promise<boolean> {
  const { rowCount } = await client.query(
    'select 1 from pgmcp.seed_runs where dataset = $1',
    [dataset],
  );
  return (rowCount ?? 0) > 0;
}
