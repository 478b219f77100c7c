// Issue 34 point 3: PGMCP_SHARED_DELIVERY turns shared delivery decisions on (the default) or off,
// and anything else stops start-up with a message naming the setting.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

const BASE = { DATABASE_URL: 'postgres://unused@127.0.0.1/unused' };

describe('PGMCP_SHARED_DELIVERY', () => {
  it('is on unless set', () => {
    expect(loadConfig({}, BASE).live.sharedDelivery).toBe('on');
  });

  it('can be turned off', () => {
    const config = loadConfig({}, { ...BASE, PGMCP_SHARED_DELIVERY: 'off' });
    expect(config.live.sharedDelivery).toBe('off');
  });

  it('refuses any other value, naming the setting', () => {
    expect(() =>
      loadConfig({}, { ...BASE, PGMCP_SHARED_DELIVERY: 'yes' }),
    ).toThrow(/PGMCP_SHARED_DELIVERY must be "on" or "off"/);
  });
});
