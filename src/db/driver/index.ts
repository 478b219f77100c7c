// The one room where pgmcp drives pg's private API (README.md beside this file): the rest of db/
// imports the driver internals from here, and only through a handle that the probe allowed them.
export { cancelBackend } from './backend-cancel.js';
export { copyBothOf, type CopyBoth } from './copy-both.js';
export {
  ImplicitTransaction,
  parsedStatementsOf,
  type ImplicitField,
  type ImplicitStatement,
} from './implicit-transaction.js';
export {
  useDriverInternals,
  type DriverInternalsOptions,
} from './internals.js';
export {
  driverInternalsProblem,
  installedDriver,
  type DriverShape,
} from './probe.js';
export { RequestPipelines } from './request-pipeline.js';
