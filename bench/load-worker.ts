// Worker thread that runs one HTTP load or list walk, so the clients' own work stays off the
// server's event loop.
import { parentPort, workerData } from 'node:worker_threads';
import { runLoad, type LoadSpec } from './load.js';
import { walkList, type WalkSpec } from './walk.js';

const spec = workerData as LoadSpec | WalkSpec;
const result = 'walks' in spec ? await walkList(spec) : await runLoad(spec);
parentPort?.postMessage(result);
