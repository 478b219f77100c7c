// Builds pgmcp's desktop-extension bundle (.mcpb) for stdio hosts: the compiled server, its
// migrations and seeds, and the lockfile's production dependencies (without the embedded
// PostgreSQL's binaries: the bundle always serves the database its user names), with a manifest
// whose user settings are the database URL and the role requests run as.
// Usage: npm run bundle:mcpb [-- --out <folder>]   (default folder: dist/)
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
);
const MCPB_CLI = path.join(
  ROOT,
  'node_modules',
  '@anthropic-ai',
  'mcpb',
  'dist',
  'cli',
  'cli.js',
);
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The manifest (MCPB manifest 0.3): pgmcp serve --stdio, configured by two user settings. */
export function bundleManifest(packageJson) {
  return {
    manifest_version: '0.3',
    name: 'pgmcp',
    display_name: 'pgmcp: PostgreSQL resources',
    version: packageJson.version,
    description: packageJson.description,
    author: { name: 'pgmcp contributors' },
    license: packageJson.license,
    keywords: ['postgresql', 'database', 'resources'],
    server: {
      type: 'node',
      entry_point: 'bin/pgmcp.js',
      mcp_config: {
        command: 'node',
        args: ['${__dirname}/bin/pgmcp.js', 'serve', '--stdio'],
        env: {
          DATABASE_URL: '${user_config.database_url}',
          PGMCP_ROLE: '${user_config.role}',
          PGMCP_LOG_FORMAT: 'json',
        },
      },
    },
    user_config: {
      database_url: {
        type: 'string',
        title: 'Database URL',
        description:
          'postgres://user:password@host:5432/database: the login pgmcp connects as. pgmcp applies its pending migrations at start-up when this login may.',
        required: true,
        sensitive: true,
      },
      role: {
        type: 'string',
        title: 'Postgres role',
        description:
          'The role every request runs as (the login must be granted it). Empty: the login itself.',
        required: false,
        default: '',
      },
    },
    compatibility: {
      platforms: ['darwin', 'linux', 'win32'],
      runtimes: { node: packageJson.engines.node },
    },
  };
}

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} exited with ${result.status}`,
    );
}

function build(outFolder) {
  const packageJson = JSON.parse(
    readFileSync(path.join(ROOT, 'package.json'), 'utf8'),
  );
  const staging = path.join(outFolder, 'mcpb-staging');
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // The package's own build (src only, no source maps), straight into the staging folder.
  run(
    process.execPath,
    [
      TSC,
      '-p',
      'tsconfig.package.json',
      '--outDir',
      path.join(staging, 'dist'),
    ],
    ROOT,
  );
  for (const file of [
    'package.json',
    'package-lock.json',
    'README.md',
    'bin/pgmcp.js',
    'migrations',
    'seeds',
  ])
    cpSync(path.join(ROOT, file), path.join(staging, file), {
      recursive: true,
    });
  // Install scripts are skipped: pgmcp's prepare builds a checkout, and the only dependency
  // script hydrates the embedded PostgreSQL's binaries, which are left out.
  run(
    'npm',
    [
      'ci',
      '--omit=dev',
      '--omit=optional',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
    ],
    staging,
  );
  writeFileSync(
    path.join(staging, 'manifest.json'),
    `${JSON.stringify(bundleManifest(packageJson), null, 2)}\n`,
  );
  const bundle = path.join(outFolder, `pgmcp-${packageJson.version}.mcpb`);
  run(process.execPath, [MCPB_CLI, 'pack', staging, bundle], ROOT);
  rmSync(staging, { recursive: true, force: true });
  process.stdout.write(`${bundle}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  build(
    path.resolve(
      at === -1 ? path.join(ROOT, 'dist') : (process.argv[at + 1] ?? 'dist'),
    ),
  );
}
