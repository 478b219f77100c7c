// Worker thread that runs one HTTP load, so the clients' own work stays off the server's event loop.
import { parentPort, workerData } from 'node:worker_threads';
import { runLoad, type LoadSpec } from './load.js';

const result = await runLoad(workerData as LoadSpec);
parentPort?.postMessage(result);
