// Which server answered a query or explain call (issue 36 point 1), in the result's text and its
// structuredContent, when the database has standbys.
import type { SqlRows } from '../db/index.js';

/** Which server answered, present when the database has standbys (docs/databases.md "Standbys"). */
export const ANSWERED_BY_SCHEMA = {
  type: 'object',
  properties: {
    server: { enum: ['primary', 'standby'] },
    name: {
      type: 'string',
      description: '"primary", or the standby\'s host:port.',
    },
  },
  required: ['server', 'name'],
  description:
    'Present when the database has standbys: the server that ran the statement.',
};

/** `result.server` as the tool's answered_by member, and its line under the text. */
export function answeredBy(server: SqlRows['server']): {
  member: Record<string, unknown>;
  line: string;
} {
  if (server === undefined) return { member: {}, line: '' };
  return {
    member: { answered_by: { server: server.kind, name: server.name } },
    line:
      server.kind === 'primary'
        ? '\n(answered by the primary)'
        : `\n(answered by the standby ${server.name})`,
  };
}
