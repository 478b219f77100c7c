// Runs a Dockerfile's build steps without Docker: each stage gets its own folder standing for its
// root, COPY copies from the build context or an earlier stage, RUN runs in the stage's WORKDIR.
// Only the instructions pgmcp's Dockerfile uses are known; anything else fails the parse.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export interface Instruction {
  readonly keyword: string;
  /** Flags such as --from=build, in order. */
  readonly flags: readonly string[];
  /** The rest of the line, flags removed. */
  readonly rest: string;
}

export interface Stage {
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

const KNOWN = new Set([
  'FROM',
  'WORKDIR',
  'COPY',
  'RUN',
  'ENV',
  'USER',
  'EXPOSE',
  'HEALTHCHECK',
  'ENTRYPOINT',
  'CMD',
]);

/** The Dockerfile's stages: continuation lines joined, comments dropped. */
export function parseDockerfile(text: string): Stage[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const stages: {
    image: string;
    name: string | undefined;
    instructions: Instruction[];
  }[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\w+)\s+(.*)$/.exec(line);
    if (match?.[1] === undefined || match[2] === undefined)
      throw new Error(`Dockerfile: cannot read ${line}`);
    const keyword = match[1].toUpperCase();
    if (!KNOWN.has(keyword))
      throw new Error(`Dockerfile: ${keyword} is not handled by this runner`);
    let rest = match[2];
    const flags: string[] = [];
    for (
      let flag = /^(--\S+)\s+/.exec(rest);
      flag?.[1] !== undefined;
      flag = /^(--\S+)\s+/.exec(rest)
    ) {
      flags.push(flag[1]);
      rest = rest.slice(flag[0].length);
    }
    if (keyword === 'FROM') {
      const [image, as, name] = rest.split(/\s+/);
      if (image === undefined)
        throw new Error('Dockerfile: FROM without image');
      stages.push({
        image,
        name: as?.toUpperCase() === 'AS' ? name : undefined,
        instructions: [],
      });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined)
      throw new Error(`Dockerfile: ${keyword} before FROM`);
    stage.instructions.push({ keyword, flags, rest });
  }
  return stages;
}

/** ENV's pairs: `A=1 B=2` (values without spaces, as pgmcp's Dockerfile writes them). */
export function envPairs(rest: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of rest.split(/\s+/)) {
    const equals = pair.indexOf('=');
    if (equals <= 0)
      throw new Error(`Dockerfile: ENV ${rest} is not NAME=value`);
    pairs[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return pairs;
}

/** A stage as built: its root folder, final WORKDIR, environment, user, and exec-form commands. */
export interface BuiltStage {
  readonly root: string;
  readonly workdir: string;
  readonly env: Record<string, string>;
  readonly user: string | undefined;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  readonly healthcheck: readonly string[];
}

function execForm(rest: string): string[] {
  const parsed = JSON.parse(rest) as unknown;
  if (
    !Array.isArray(parsed) ||
    !parsed.every((item) => typeof item === 'string')
  )
    throw new Error(`Dockerfile: ${rest} is not the exec (JSON array) form`);
  return parsed;
}

/**
 * Build every stage under `into`/<index>, copying from `context`; RUN steps get `runEnv` (their whole
 * environment besides the stage's ENV). Throws when a step fails.
 */
export function buildStages(options: {
  stages: readonly Stage[];
  context: string;
  into: string;
  runEnv: Record<string, string>;
}): BuiltStage[] {
  const built: BuiltStage[] = [];
  options.stages.forEach((stage, index) => {
    const root = path.join(options.into, String(index));
    mkdirSync(root, { recursive: true });
    let workdir = '/';
    let user: string | undefined;
    let entrypoint: string[] = [];
    let cmd: string[] = [];
    let healthcheck: string[] = [];
    const env: Record<string, string> = {};
    const inRoot = (target: string): string =>
      path.join(root, path.posix.resolve(workdir, target));
    for (const { keyword, flags, rest } of stage.instructions) {
      switch (keyword) {
        case 'WORKDIR':
          workdir = path.posix.resolve(workdir, rest);
          mkdirSync(inRoot('.'), { recursive: true });
          break;
        case 'COPY': {
          const parts = rest.split(/\s+/);
          const target = parts.pop();
          if (target === undefined || parts.length === 0)
            throw new Error(`Dockerfile: COPY ${rest}`);
          const from = flags
            .find((flag) => flag.startsWith('--from='))
            ?.slice('--from='.length);
          const sourceStage = options.stages.findIndex(
            (other) => other.name === from,
          );
          if (from !== undefined && sourceStage === -1)
            throw new Error(`Dockerfile: no stage ${from}`);
          for (const source of parts) {
            const sourcePath =
              from === undefined
                ? path.join(options.context, source)
                : path.join(options.into, String(sourceStage), source);
            const destination = inRoot(target);
            // Docker copies a folder's contents into the target; a file into a target ending in /.
            const fileIntoFolder =
              target.endsWith('/') && !source.endsWith('/');
            const copyTo = fileIntoFolder
              ? path.join(destination, path.basename(source))
              : destination;
            mkdirSync(path.dirname(copyTo), { recursive: true });
            cpSync(sourcePath, copyTo, { recursive: true });
          }
          break;
        }
        case 'RUN': {
          const result = spawnSync('sh', ['-c', rest], {
            cwd: inRoot('.'),
            env: { ...options.runEnv, ...env },
            encoding: 'utf8',
          });
          if (result.status !== 0)
            throw new Error(
              `RUN ${rest} exited with ${result.status}: ${result.stderr}`,
            );
          break;
        }
        case 'ENV':
          Object.assign(env, envPairs(rest));
          break;
        case 'USER':
          user = rest;
          break;
        case 'ENTRYPOINT':
          entrypoint = execForm(rest);
          break;
        case 'CMD':
          cmd = execForm(rest);
          break;
        case 'HEALTHCHECK': {
          const command = /^CMD\s+(.*)$/.exec(rest);
          if (command?.[1] === undefined)
            throw new Error(`Dockerfile: HEALTHCHECK ${rest}`);
          healthcheck = execForm(command[1]);
          break;
        }
        case 'EXPOSE':
          break;
        default:
          throw new Error(
            `Dockerfile: ${keyword} is not handled by this runner`,
          );
      }
    }
    built.push({ root, workdir, env, user, entrypoint, cmd, healthcheck });
  });
  return built;
}
