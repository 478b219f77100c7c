// Issue 36 point 2: PGMCP_CHANGE_SOURCE picks each database's change source (triggers by default,
// or the WAL), PGMCP_WAL_SLOT_MAX_BYTES bounds the slot, and PGMCP_WAL_MAX_TRANSACTION_ROWS and
// PGMCP_WAL_MAX_PENDING_ROWS the rows the reader keeps; bad values stop start-up.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';

const BASE = { DATABASE_URL: 'postgres://unused@127.0.0.1/unused' };

describe('change source settings', () => {
  it('default to triggers everywhere, a 1 GiB slot bound and row bounds', () => {
    expect(loadConfig({}, BASE).changeCapture).toEqual({
      source: { default: 'triggers', databases: {} },
      slotMaxBytes: 1024 ** 3,
      maxTransactionRows: 10_000,
      maxPendingRows: 100_000,
    });
  });

  it('take a default and per-database exceptions', () => {
    const config = loadConfig(
      {},
      {
        ...BASE,
        PGMCP_CHANGE_SOURCE: 'wal hr=triggers main=wal',
        PGMCP_WAL_SLOT_MAX_BYTES: '67108864',
        PGMCP_WAL_MAX_TRANSACTION_ROWS: '500',
        PGMCP_WAL_MAX_PENDING_ROWS: '2000',
      },
    );
    expect(config.changeCapture).toEqual({
      source: { default: 'wal', databases: { hr: 'triggers', main: 'wal' } },
      slotMaxBytes: 64 * 1024 * 1024,
      maxTransactionRows: 500,
      maxPendingRows: 2000,
    });
    expect(
      loadConfig({}, { ...BASE, PGMCP_CHANGE_SOURCE: 'main=wal' }).changeCapture
        .source,
    ).toEqual({ default: 'triggers', databases: { main: 'wal' } });
  });

  it('refuse unknown sources and out-of-range bounds, naming the setting', () => {
    for (const [name, value, says] of [
      [
        'PGMCP_CHANGE_SOURCE',
        'logical',
        /PGMCP_CHANGE_SOURCE is "triggers" or "wal"/,
      ],
      ['PGMCP_CHANGE_SOURCE', 'main=wal; drop', /PGMCP_CHANGE_SOURCE/],
      [
        'PGMCP_WAL_SLOT_MAX_BYTES',
        '1000',
        /PGMCP_WAL_SLOT_MAX_BYTES must be at least 1048576/,
      ],
      [
        'PGMCP_WAL_SLOT_MAX_BYTES',
        '1GB',
        /PGMCP_WAL_SLOT_MAX_BYTES must be a whole number/,
      ],
      [
        'PGMCP_WAL_MAX_TRANSACTION_ROWS',
        '0',
        /PGMCP_WAL_MAX_TRANSACTION_ROWS must be at least 1/,
      ],
      [
        'PGMCP_WAL_MAX_PENDING_ROWS',
        'many',
        /PGMCP_WAL_MAX_PENDING_ROWS must be a whole number/,
      ],
    ] as const) {
      const load = () => loadConfig({}, { ...BASE, [name]: value });
      expect(load, `${name}=${value}`).toThrow(ConfigError);
      expect(load, `${name}=${value}`).toThrow(says);
    }
  });
});
