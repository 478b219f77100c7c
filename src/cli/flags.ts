// The CLI's one flag parser: strict (an unknown flag is a usage error), --help on every command.
import { parseArgs } from 'node:util';
import type { Logger } from '../log.js';

/** Bad usage: reported with the usage text and exit code 2. */
export class UsageError extends Error {}

/** A command's flags, as node:util parseArgs takes them (--help is added to every command). */
export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean }
>;

/** Parsed arguments: flag values by name, and the positionals in order. */
export interface ParsedFlags {
  readonly values: Readonly<
    Record<string, string | boolean | string[] | undefined>
  >;
  readonly positionals: readonly string[];
}

/** One CLI command: its help text, its flags and what it does. */
export interface CliCommand {
  /** The name a usage error is reported under (`unexpose` shares `expose`'s). */
  readonly name: string;
  readonly help: string;
  readonly options: OptionSpec;
  /** Run with the parsed flags; `invokedAs` is the command word given (expose or unexpose). */
  run(flags: ParsedFlags, logger: Logger, invokedAs: string): Promise<void>;
}

/** Parse flags strictly; unknown flags are a usage error. Values are strings or booleans. */
export function parseFlags(
  command: string,
  args: string[],
  options: OptionSpec,
): ParsedFlags {
  try {
    const parsed = parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return {
      values: parsed.values,
      positionals: parsed.positionals,
    };
  } catch (error) {
    throw new UsageError(
      `${command}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** A string flag's value (undefined when not given). */
export function stringFlag(
  flags: ParsedFlags,
  name: string,
): string | undefined {
  const value = flags.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A boolean flag's value (undefined when not given). */
export function booleanFlag(
  flags: ParsedFlags,
  name: string,
): boolean | undefined {
  const value = flags.values[name];
  return typeof value === 'boolean' ? value : undefined;
}

/** A repeatable string flag's values (undefined when not given). */
export function listFlag(
  flags: ParsedFlags,
  name: string,
): string[] | undefined {
  const value = flags.values[name];
  return Array.isArray(value) ? value : undefined;
}
