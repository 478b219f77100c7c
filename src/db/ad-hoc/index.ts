// The query and explain tools' SQL (issue 15 points 3, 4): a caller's own statement, run as its role
// and made read-only by PostgreSQL itself, never by parsing it here.
//
// The statement is the tail of `DECLARE … CURSOR FOR`, sent through the extended protocol with its
// parameters: PostgreSQL then accepts exactly one SELECT, VALUES, TABLE or WITH … SELECT (anything
// else, SET ROLE, RESET, DO, CALL, COPY, LISTEN, INSERT, DDL, is a syntax error, and a second
// statement is refused by the protocol), in a READ ONLY transaction (writes, FOR UPDATE and writing
// functions fail with 25006), under the session's statement timeout, with the role set
// transaction-locally. Rows are FETCHed max+1 at most, so a huge result is never computed past the
// cap, and the FETCH stops at a byte budget, so PostgreSQL never sends much more than it (issue 32
// point 5; db/ad-hoc/statement-limits.ts has the call's other bounds: deadline, temp files, cost). The FETCH
// runs inside a SECURITY DEFINER function owned by the request role itself: the
// statement keeps exactly the role's privileges, and PostgreSQL refuses set_config('role', …) inside
// it ("cannot set parameter role within security-definer function"), so a statement cannot switch
// to another role the login may assume. The transaction always ends in ROLLBACK, which undoes any
// setting the statement made.
//
// Each pooled connection makes a role's functions once, as temporary functions (pg_temp) owned by
// the role, and keeps them until the connection closes: making them per call cost more than the
// rest of the call. A function checks that its owner still has the name it was made for (a renamed
// role's functions are never used for a new role of the old name), and that the request calling it
// runs as that role: another role's statement on the same connection cannot run it. The check is
// in the body, not a REVOKE: GRANT and REVOKE name no object to an event trigger, so pgmcp's
// schema-change capture would log each as a catalog change that every listener hears of (issue 32
// point 7). Making them runs no other DDL, and the capture ignores objects in pg_temp.
//
// The files: fetch.ts (the query tool), explain.ts (the explain tool and a statement's tables),
// tool-connection.ts (the connection lent to a call and its clean-up), role-functions.ts,
// settings.ts (set-up and re-checks over the public API), identity.ts (the one-round-trip identity
// statement), tool-session.ts (the types they share).
export { explainSql, tablesOfSql } from './explain.js';
export { runReadOnlySql } from './fetch.js';
export { storeRoleFunctions } from './stored-role-functions.js';
export {
  SqlStatementError,
  type AdHocSqlOptions,
  type SqlColumn,
  type SqlRows,
} from './tool-session.js';
