// Public surface of tools/sql-guard/: the statement guard query and explain run first.
export {
  createSqlGuard,
  SQL_GUARD_DEFAULTS,
  type GuardVerdict,
  type SqlGuard,
  type SqlGuardOptions,
} from './sql-guard.js';
