// Stop a pooled connection's running statement: PostgreSQL's CancelRequest, the protocol's own
// cancel (what pg_cancel_backend does), sent on a fresh socket so it needs no pool slot.
import net from 'node:net';
import type pg from 'pg';

/** The CancelRequest code (protocol §55.2.8): 1234 in the high 16 bits, 5678 in the low. */
const CANCEL_REQUEST_CODE = 80877102;
/** A cancel that cannot reach the server in this time has failed: the caller drops the connection. */
const CANCEL_TIMEOUT_MS = 2000;

/** What pg keeps about a connection's backend (set from BackendKeyData; not in pg's types). */
interface BackendKey {
  readonly processID?: number | null;
  readonly secretKey?: number | null;
  readonly host?: string;
  readonly port?: number;
}

/**
 * Ask the server to cancel whatever `client`'s backend is running. Resolves true once the server
 * has taken the request (it closes the socket after signalling the backend), false when it could
 * not be sent. A cancel that reaches an idle backend does nothing (PostgreSQL forgets cancels that
 * arrive between statements), so the connection stays reusable either way once this settles.
 */
export function cancelBackend(client: pg.PoolClient): Promise<boolean> {
  const key = client as unknown as BackendKey;
  const { processID, secretKey, host, port } = key;
  if (typeof processID !== 'number' || typeof secretKey !== 'number')
    return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket =
      host !== undefined && host.startsWith('/')
        ? net.connect(`${host}/.s.PGSQL.${port ?? 5432}`)
        : net.connect(port ?? 5432, host ?? 'localhost');
    let sent = false;
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), CANCEL_TIMEOUT_MS);
    socket.on('connect', () => {
      const packet = Buffer.alloc(16);
      packet.writeInt32BE(16, 0);
      packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      packet.writeInt32BE(processID, 8);
      packet.writeInt32BE(secretKey, 12);
      socket.end(packet);
      sent = true;
    });
    // The server answers nothing and closes: that close is the acknowledgement.
    socket.on('close', () => finish(sent));
    socket.on('error', () => finish(false));
  });
}
