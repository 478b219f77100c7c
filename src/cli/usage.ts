// The CLI's top-level usage: every command in a line (each command's own help is beside it).
import { SERVER_INFO } from '../version.js';

export const USAGE = `pgmcp ${SERVER_INFO.version}: an MCP resource server over PostgreSQL

Usage: pgmcp <command> [options]

Commands:
  serve             serve MCP over Streamable HTTP (default) or stdio
  migrate           apply pending migrations and exit
  seed <dataset>    load a dataset from seeds/ (demo, conformance, bench) and exit
  token --role R    print a development bearer token signed with the HS256 secret
  role grant <role> let pgmcp_authenticator switch to <role> for requests
  expose <table>    capture a table's row changes for live updates (unexpose removes it)
  selftest          check a deployment as a client would (--role R) and exit; serves nothing

Run \`pgmcp <command> --help\` for a command's options.
Without DATABASE_URL (or PG* variables) pgmcp runs an embedded PostgreSQL with data in .pgmcp/.
`;
