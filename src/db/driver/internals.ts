// Whether a database handle drives pg's internals (README.md beside this file) or only its public
// API: PGMCP_DRIVER_PATCHES, then the start-up probe (driver/probe.ts). A pg whose internals are
// not what the probe expects is logged once and served through the public API, never refused.
import {
  driverInternalsProblem,
  installedDriver,
  type DriverShape,
} from './probe.js';

/** PGMCP_DRIVER_PATCHES, read once: "on" (the default) or "off". */
const SETTING = process.env['PGMCP_DRIVER_PATCHES'] ?? 'on';

export interface DriverInternalsOptions {
  /** "on" or "off"; default PGMCP_DRIVER_PATCHES (the bench sets it per handle). */
  readonly setting?: string | undefined;
  /** The pg to probe; default the one this process loads (a test hands in another shape). */
  readonly shape?: DriverShape | undefined;
  /** Told, once per process, why the internals are off although the setting is on. */
  readonly warn: (message: string) => void;
}

/** The problem already logged, so a process with several handles logs it once. */
let warned: string | undefined;

/** Whether request transactions go through the internals; throws on a setting not on or off. */
export function useDriverInternals(options: DriverInternalsOptions): boolean {
  const setting = options.setting ?? SETTING;
  if (setting !== 'on' && setting !== 'off')
    throw new Error(
      `PGMCP_DRIVER_PATCHES is "${setting}"; it must be on or off`,
    );
  if (setting === 'off') return false;
  const problem = driverInternalsProblem(options.shape ?? installedDriver());
  if (problem === undefined) return true;
  if (warned !== problem) {
    warned = problem;
    options.warn(
      `pgmcp's driver internals (src/db/driver/) are off: ${problem}. Every request goes through ` +
        `pg's public API (a round trip per statement); answers are the same. ` +
        `Set PGMCP_DRIVER_PATCHES=off to silence this.`,
    );
  }
  return false;
}
