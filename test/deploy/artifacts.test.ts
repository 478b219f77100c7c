// The deployment artifacts (issue #35 point 6): compose.yaml, the Kubernetes manifests and the
// systemd unit parse, name what they must, agree with each other and the Dockerfile, and configure
// a server pgmcp's own start-up validation accepts.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { loadConfig } from '../../src/config/index.js';
import { PROJECT_ROOT } from '../../src/version.js';
import { envPairs, parseDockerfile } from './dockerfile-runner.js';

const KUBERNETES = path.join(PROJECT_ROOT, 'deploy', 'kubernetes');

/** The runtime stage's ENV and HEALTHCHECK command, as the image carries them. */
function image(): { env: Record<string, string>; healthcheck: string[] } {
  const stages = parseDockerfile(
    readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8'),
  );
  const env: Record<string, string> = {};
  let healthcheck: string[] = [];
  for (const { keyword, rest } of stages.at(-1)?.instructions ?? []) {
    if (keyword === 'ENV') Object.assign(env, envPairs(rest));
    if (keyword === 'HEALTHCHECK')
      healthcheck = JSON.parse(rest.replace(/^CMD\s+/, '')) as string[];
  }
  return { env, healthcheck };
}

/** pgmcp's start-up validation of `env` (throws, naming the setting, when one is wrong). */
function validateSettings(env: Record<string, string>): void {
  loadConfig({}, env);
}

type Manifest = { kind: string } & Record<string, unknown>;

function manifests(): Map<string, Manifest> {
  const byKind = new Map<string, Manifest>();
  for (const file of readdirSync(KUBERNETES)) {
    expect(file).toMatch(/\.yaml$/);
    for (const document of parseAllDocuments(
      readFileSync(path.join(KUBERNETES, file), 'utf8'),
    )) {
      expect(document.errors, file).toEqual([]);
      const object = document.toJSON() as Manifest;
      expect(byKind.has(object.kind), `two ${object.kind}s`).toBe(false);
      byKind.set(object.kind, object);
    }
  }
  return byKind;
}

describe('compose.yaml', () => {
  const compose = parse(
    readFileSync(path.join(PROJECT_ROOT, 'compose.yaml'), 'utf8'),
  ) as {
    services: Record<string, Record<string, unknown>>;
    volumes?: Record<string, unknown>;
  };

  it('has Prometheus scrape the admin listener pgmcp serves on the compose network', () => {
    const { pgmcp, prometheus } = compose.services;
    const environment = pgmcp?.['environment'] as Record<string, string>;
    const port = environment['PGMCP_ADMIN_PORT'];
    expect(environment['PGMCP_ADMIN_HOST']).toBe('0.0.0.0');
    // Never published on the host: only Prometheus reaches it.
    expect(pgmcp?.['ports']).not.toContainEqual(
      expect.stringContaining(`:${port}`),
    );
    const mounted =
      (prometheus?.['volumes'] as string[])[0]?.split(':')[0] ?? '';
    const scrape = parse(
      readFileSync(path.join(PROJECT_ROOT, mounted), 'utf8'),
    ) as {
      scrape_configs: {
        metrics_path: string;
        static_configs: { targets: string[] }[];
      }[];
    };
    expect(scrape.scrape_configs[0]).toMatchObject({
      metrics_path: '/metrics',
      static_configs: [{ targets: [`pgmcp:${port}`] }],
    });
    // The settings pgmcp reads accept the port and host as compose passes them.
    expect(
      loadConfig(
        {},
        { ...environment, PGPASSWORD: 'x', PGMCP_JWT_SECRET: 'x'.repeat(32) },
      ).operations,
    ).toMatchObject({ adminPort: Number(port), adminHost: '0.0.0.0' });
  });

  it('runs PostgreSQL, a one-shot migrate after it is healthy, and pgmcp after migrate completed', () => {
    const { postgres, migrate, pgmcp } = compose.services;
    expect(Object.keys(compose.services).sort()).toEqual([
      'migrate',
      'pgmcp',
      'postgres',
      'prometheus',
    ]);
    const postgresCheck = postgres?.['healthcheck'] as { test: string[] };
    expect(postgresCheck.test.join(' ')).toContain('pg_isready');
    expect(migrate).toMatchObject({
      command: ['migrate'],
      restart: 'no',
      depends_on: { postgres: { condition: 'service_healthy' } },
    });
    expect(pgmcp).toMatchObject({
      command: ['serve', '--no-migrate'],
      depends_on: {
        postgres: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      },
    });
    // Both run the image the Dockerfile builds.
    expect(migrate?.['build']).toBe('.');
    expect(pgmcp?.['image']).toBe(migrate?.['image']);
  });

  it("checks pgmcp's health with the image's own HEALTHCHECK command", () => {
    const test = (
      compose.services['pgmcp']?.['healthcheck'] as { test: string[] }
    ).test;
    // Compose reads $$ as a literal $.
    expect(test.map((part) => part.replaceAll('$$', '$'))).toEqual([
      'CMD',
      ...image().healthcheck,
    ]);
  });

  it("mounts the authenticator's init script, and gives pgmcp settings its start-up accepts", () => {
    const volumes = compose.services['postgres']?.['volumes'] as string[];
    const init = volumes.find((volume) =>
      volume.includes('/docker-entrypoint-initdb.d'),
    );
    const folder = path.join(PROJECT_ROOT, init?.split(':')[0] ?? 'missing');
    expect(readdirSync(folder)).toContain('10-authenticator.sh');
    const script = path.join(folder, '10-authenticator.sh');
    expect(spawnSync('sh', ['-n', script]).status).toBe(0);
    expect(readFileSync(script, 'utf8')).toMatch(
      /CREATE ROLE pgmcp_authenticator LOGIN NOINHERIT PASSWORD :'password'/,
    );

    const environment = compose.services['pgmcp']?.['environment'] as Record<
      string,
      string
    >;
    const env: Record<string, string> = { ...image().env };
    for (const [name, value] of Object.entries(environment))
      // ${NAME:?message} is the operator's secret: a placeholder of the right length here.
      env[name] = value.startsWith('${') ? 'x'.repeat(40) : value;
    expect(env['PGUSER']).toBe('pgmcp_authenticator');
    expect(() => validateSettings(env)).not.toThrow();
  });
});

describe('the Kubernetes manifests', () => {
  it('validate against the Kubernetes schemas', () => {
    const byKind = manifests();
    const models = {
      ConfigMap,
      Secret,
      Service,
      Deployment,
      Job,
      PodDisruptionBudget,
    } as const;
    expect([...byKind.keys()].sort()).toEqual(Object.keys(models).sort());
    for (const [kind, Model] of Object.entries(models)) {
      const object = byKind.get(kind);
      expect(object, kind).toBeDefined();
      // Each model's validate() throws on a value its schema refuses.
      expect(() => new Model(object as never).validate(), kind).not.toThrow();
    }
  });

  it('probe /healthz for start-up and liveness and /readyz for readiness, run as non-root with limits, and wait for a drain', () => {
    const deployment = new Deployment(manifests().get('Deployment') as never);
    const pod = deployment.spec?.template.spec;
    const container = pod?.containers[0];
    expect(container?.startupProbe?.httpGet?.path).toBe('/healthz');
    expect(container?.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container?.readinessProbe?.httpGet?.path).toBe('/readyz');
    for (const probe of [
      container?.startupProbe,
      container?.livenessProbe,
      container?.readinessProbe,
    ])
      expect(container?.ports?.map((port) => port.name)).toContain(
        probe?.httpGet?.port,
      );
    expect(pod?.securityContext?.runAsNonRoot).toBe(true);
    expect(pod?.securityContext?.runAsUser).not.toBe(0);
    expect(container?.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container?.resources?.requests?.['cpu']).toBeDefined();
    expect(container?.resources?.requests?.['memory']).toBeDefined();
    expect(container?.resources?.limits?.['memory']).toBeDefined();
    // The planned drain: a 5 s delay and a 30 s grace must fit (docs/operations.md, "Deploying").
    expect(pod?.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(35);
  });

  it('agree with each other: Service, budget and Deployment share labels; Job and Deployment share the image and Secret', () => {
    const byKind = manifests();
    const deployment = new Deployment(byKind.get('Deployment') as never);
    const job = new Job(byKind.get('Job') as never);
    const service = new Service(byKind.get('Service') as never);
    const budget = new PodDisruptionBudget(
      byKind.get('PodDisruptionBudget') as never,
    );
    const secret = new Secret(byKind.get('Secret') as never);
    const labels = deployment.spec?.template.metadata?.labels ?? {};
    expect(deployment.spec?.selector.matchLabels).toEqual(labels);
    expect(labels).toMatchObject(service.spec?.selector ?? { none: true });
    expect(labels).toMatchObject(
      budget.spec?.selector?.matchLabels ?? { none: true },
    );
    expect(budget.spec?.minAvailable).toBeLessThan(
      deployment.spec?.replicas ?? 0,
    );
    const server = deployment.spec?.template.spec?.containers[0];
    const migrate = job.spec?.template.spec?.containers[0];
    expect(migrate?.image).toBe(server?.image);
    expect(migrate?.args).toEqual(['migrate']);
    expect(server?.args).toEqual(['serve', '--no-migrate']);
    expect(server?.ports?.map((port) => port.name)).toContain(
      service.spec?.ports?.[0]?.targetPort,
    );
    const secretKeys = Object.keys(secret.stringData ?? {});
    for (const container of [server, migrate])
      for (const variable of container?.env ?? [])
        if (variable.valueFrom?.secretKeyRef !== undefined) {
          expect(variable.valueFrom.secretKeyRef.name).toBe(
            secret.metadata?.name,
          );
          expect(secretKeys).toContain(variable.valueFrom.secretKeyRef.key);
        }
    // The example Secret holds placeholders only.
    for (const value of Object.values(secret.stringData ?? {}))
      expect(value).toMatch(/^REPLACE_WITH_/);
  });

  it("configures a server pgmcp's start-up accepts, with the ConfigMap's config file", () => {
    const byKind = manifests();
    const deployment = new Deployment(byKind.get('Deployment') as never);
    const configMap = new ConfigMap(byKind.get('ConfigMap') as never);
    const server = deployment.spec?.template.spec?.containers[0];
    const mount = server?.volumeMounts?.find(
      (volume) => volume.name === 'config',
    );
    const folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-kubernetes-'));
    try {
      for (const [name, content] of Object.entries(configMap.data ?? {}))
        writeFileSync(path.join(folder, name), content);
      const env: Record<string, string> = { ...image().env };
      for (const variable of server?.env ?? [])
        env[variable.name] =
          variable.value?.replace(mount?.mountPath ?? '', folder) ??
          'x'.repeat(40);
      expect(existsSync(env['PGMCP_CONFIG'] ?? '')).toBe(true);
      expect(() => validateSettings(env)).not.toThrow();
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('the systemd unit', () => {
  const unit = path.join(PROJECT_ROOT, 'deploy', 'systemd', 'pgmcp.service');
  const text = readFileSync(unit, 'utf8');

  it('runs pgmcp serve as its own user, with the hardening options', () => {
    for (const line of [
      'User=pgmcp',
      'NoNewPrivileges=yes',
      'CapabilityBoundingSet=',
      'ProtectSystem=strict',
      'ProtectHome=yes',
      'PrivateTmp=yes',
      'PrivateDevices=yes',
      'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX',
      'SystemCallFilter=@system-service',
    ])
      expect(text.split('\n')).toContain(line);
    expect(text).toMatch(
      /^ExecStart=\S+ \S+\/bin\/pgmcp\.js serve --no-migrate$/m,
    );
    expect(text).toMatch(/^\[Install\]\nWantedBy=multi-user\.target$/m);
  });

  // systemd-analyze (Debian's systemd package) reads the unit as systemd would: any unknown key or
  // unreadable value is printed, which fails this. It also needs ExecStart's program to exist, so
  // the copy checked names this Node where the unit names /usr/bin/node.
  it.runIf(spawnSync('systemd-analyze', ['--version']).status === 0)(
    'passes systemd-analyze verify without a warning',
    () => {
      const folder = mkdtempSync(path.join(os.tmpdir(), 'pgmcp-systemd-'));
      try {
        const copy = path.join(folder, 'pgmcp.service');
        writeFileSync(
          copy,
          text.replace(
            'ExecStart=/usr/bin/node ',
            `ExecStart=${process.execPath} `,
          ),
        );
        const result = spawnSync('systemd-analyze', ['verify', copy], {
          encoding: 'utf8',
        });
        expect(result.stderr + result.stdout).toBe('');
        expect(result.status).toBe(0);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  );
});
