// Every manifest in deploy/ checked offline with the real tools (docs/kubernetes.md): helm lint and helm
// template for several value sets, kubeconform -strict against the Kubernetes OpenAPI schemas and KServe's
// and the Prometheus operator's CRDs (an unknown field planted in a copy must fail), hadolint on the
// Dockerfile, and the arguments KServe passes to Triton accepted by Nereid's own flag parser.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { parseFlags } from '../../src/compose/flags.js';
import { CHART, deployTools, missing, ROOT, run, type DeployTools } from './tools.js';

const tools = deployTools();
const t = (typeof tools === 'string' ? {} : tools) as DeployTools;

/** Value sets covering each model-repository source and every optional object. */
const VALUE_SETS: Record<string, string[]> = {
  'pvc (defaults)': ['--set', 'modelRepository.pvc.claimName=models'],
  'pvc, autoscaling, ServiceMonitor, maxUnavailable, extras': [
    '--set',
    'modelRepository.pvc.claimName=models',
    '--set',
    'modelRepository.pvc.subPath=repo',
    '--set',
    'autoscaling.enabled=true',
    '--set',
    'serviceMonitor.enabled=true',
    '--set',
    'podDisruptionBudget.maxUnavailable=1',
    '--set',
    'serviceAccount.create=true',
    '--set',
    'extraArgs={--log-verbose=1}',
    '--set',
    'loadModels={simple,densenet_onnx}',
    '--set',
    'modelControlMode=explicit',
    '--set-json',
    'resources={"limits":{"cpu":"2","memory":"4Gi"}}',
    '--set-json',
    'nodeSelector={"kubernetes.io/arch":"amd64"}',
    '--set-json',
    'tolerations=[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}]',
    '--set-json',
    'extraEnv=[{"name":"OMP_NUM_THREADS","value":"1"}]',
    '--set-json',
    'autoscaling.behavior={"scaleDown":{"stabilizationWindowSeconds":300}}',
  ],
  'configMap files': [
    '--set-json',
    'modelRepository={"source":"configMap","configMap":{"files":{"identity/config.pbtxt":"backend: \\"javascript\\"\\n","identity/1/model.js":"export default class M {}\\n"},"binaryFiles":{"tiny/1/model.onnx":"CAE="}}}',
    '--set',
    'podDisruptionBudget.enabled=false',
  ],
  'existing configMap': [
    '--set-json',
    'modelRepository={"source":"configMap","configMap":{"existingName":"my-models","items":[{"key":"cfg","path":"m/config.pbtxt"}]}}',
  ],
  bucket: ['--set', 'modelRepository.source=bucket', '--set', 'modelRepository.bucket.url=s3://models/repo'],
  'on-demand multiplexing: Ingress and haproxy hashing the variant header': [
    '--set',
    'modelRepository.pvc.claimName=models',
    '--set',
    'modelControlMode=on-demand',
    '--set',
    'ingress.enabled=true',
    '--set',
    'ingress.host=models.example.com',
    '--set',
    'haproxy.enabled=true',
  ],
};

interface Kubeconform {
  resources?: { kind: string; name: string; status: string; msg: string }[];
  summary: { valid: number; invalid: number; errors: number; skipped: number };
}

async function helmTemplate(chart: string, values: string[]): Promise<string> {
  const r = await run(t.helm!, ['template', 'rel', chart, '--kube-version', t.k8sVersion, ...values]);
  assert.equal(r.code, 0, `helm template failed: ${r.stderr}`);
  return r.stdout;
}

async function kubeconform(manifests: string): Promise<Kubeconform> {
  const r = await run(
    t.kubeconform!,
    [
      '-strict',
      '-summary',
      '-output',
      'json',
      '-kubernetes-version',
      t.k8sVersion,
      '-schema-location',
      t.schemas!,
      '-',
    ],
    manifests,
  );
  return JSON.parse(r.stdout) as Kubeconform;
}

/** The parts of rendered objects the tests below read. */
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface K8sObject {
  kind: string;
  spec: {
    replicas?: number;
    template: {
      spec: {
        terminationGracePeriodSeconds: number;
        containers: {
          args: string[];
          ports: { name: string; containerPort: number }[];
          livenessProbe: Probe;
          readinessProbe: Probe;
          startupProbe: Probe;
        }[];
        volumes: { emptyDir?: { medium?: string } }[];
      };
    };
    metrics: { pods: { metric: { name: string } } }[];
  };
}

const objects = (manifests: string): K8sObject[] =>
  parseAllDocuments(manifests).map((d) => d.toJS() as K8sObject);

function kinds(manifests: string): string[] {
  return parseAllDocuments(manifests)
    .map((d) => (d.toJS() as { kind?: string } | null)?.kind)
    .filter((k): k is string => k !== undefined);
}

describe('Helm chart', { skip: missing(tools, ['helm', 'kubeconform', 'schemas']) }, () => {
  it('passes helm lint --strict', async () => {
    const r = await run(t.helm!, [
      'lint',
      '--strict',
      CHART,
      '--kube-version',
      t.k8sVersion,
      '--set',
      'modelRepository.pvc.claimName=models',
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  for (const [name, values] of Object.entries(VALUE_SETS)) {
    it(`renders valid Kubernetes objects with kubeconform -strict: ${name}`, async () => {
      const manifests = await helmTemplate(CHART, values);
      const result = await kubeconform(manifests);
      const problems = (result.resources ?? []).map((r) => `${r.kind}/${r.name}: ${r.msg}`);
      assert.deepEqual(problems, []);
      assert.equal(result.summary.skipped, 0);
      assert.equal(result.summary.valid, kinds(manifests).length, 'every rendered object was validated');
    });
  }

  it('renders every optional object when asked to', async () => {
    const found = kinds(
      await helmTemplate(CHART, VALUE_SETS['pvc, autoscaling, ServiceMonitor, maxUnavailable, extras']),
    );
    for (const k of [
      'Deployment',
      'Service',
      'ServiceAccount',
      'PodDisruptionBudget',
      'HorizontalPodAutoscaler',
      'ServiceMonitor',
    ]) {
      assert.ok(found.includes(k), `${k} missing from ${found.join(', ')}`);
    }
    assert.ok(kinds(await helmTemplate(CHART, VALUE_SETS['configMap files'])).includes('ConfigMap'));
  });

  it('hashes the variant header in the Ingress and in the haproxy config', async () => {
    const docs = parseAllDocuments(
      await helmTemplate(
        CHART,
        VALUE_SETS['on-demand multiplexing: Ingress and haproxy hashing the variant header'],
      ),
    ).map(
      (d) =>
        d.toJS() as {
          kind: string;
          metadata: { name: string; annotations?: Record<string, string> };
          data?: Record<string, string>;
          spec?: { clusterIP?: string };
        },
    );
    const ingress = docs.find((o) => o.kind === 'Ingress');
    assert.equal(
      ingress?.metadata.annotations?.['nginx.ingress.kubernetes.io/upstream-hash-by'],
      '$http_nereid_model_variant',
    );
    const cfg = docs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rel-nereid-haproxy')?.data?.[
      'haproxy.cfg'
    ];
    assert.match(cfg ?? '', /balance hdr\(nereid-model-variant\)\n\s+hash-type consistent/);
    assert.match(cfg ?? '', /rel-nereid-pods\.default\.svc\.cluster\.local:8000/);
    const pods = docs.find((o) => o.kind === 'Service' && o.metadata.name === 'rel-nereid-pods');
    assert.equal(pods?.spec?.clusterIP, 'None');
    // Neither object without being asked for.
    const plain = kinds(await helmTemplate(CHART, VALUE_SETS['pvc (defaults)']));
    assert.ok(!plain.includes('Ingress'));
  });

  it('refuses a template field Kubernetes does not know (planted in a copy of the chart)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-chart-'));
    try {
      const copy = path.join(dir, 'nereid');
      cpSync(CHART, copy, { recursive: true });
      const file = path.join(copy, 'templates/deployment.yaml');
      const text = readFileSync(file, 'utf8');
      const planted = text.replace(
        '          imagePullPolicy:',
        '          imagePullSecret: oops\n          imagePullPolicy:',
      );
      assert.notEqual(planted, text);
      writeFileSync(file, planted);
      const result = await kubeconform(await helmTemplate(copy, VALUE_SETS['pvc (defaults)']));
      assert.equal(result.summary.invalid, 1);
      assert.match(result.resources?.[0]?.msg ?? '', /additional properties 'imagePullSecret' not allowed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("documents every value of values.yaml in the chart's README", () => {
    const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
    const readme = readFileSync(path.join(CHART, 'README.md'), 'utf8').split('\n');
    const leaves = (o: Record<string, unknown>, prefix: string): [string, string][] =>
      Object.entries(o).flatMap(([k, v]) =>
        typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length > 0
          ? leaves(v as Record<string, unknown>, `${prefix}${k}.`)
          : [[prefix, k] as [string, string]],
      );
    // A row names the value (`a.b.c`), a whole object passed through as it is (`a`), or siblings
    // together (`a.b.c` / `d` / `e`, listed after their parent's path).
    const documented = (parent: string, key: string): boolean => {
      const parts = `${parent}${key}`.split('.');
      const wholes = parts.map((_, i) => '| `' + parts.slice(0, i + 1).join('.') + '`');
      const word = new RegExp(`(^|[^A-Za-z])${key}([^A-Za-z]|$)`);
      return readme.some(
        (l) =>
          wholes.some((w) => l.startsWith(w)) ||
          (parent !== '' && l.startsWith('| `' + parent) && word.test(l)),
      );
    };
    const undocumented = leaves(values, '')
      .filter(([parent, key]) => !documented(parent, key))
      .map(([parent, key]) => parent + key);
    assert.deepEqual(undocumented, []);
  });

  it('matches the drain: grace period, probes, shutdown flags, /dev/shm', async () => {
    const docs = objects(
      await helmTemplate(CHART, [
        ...VALUE_SETS['pvc (defaults)'],
        '--set',
        'shutdown.exitDelaySecs=7',
        '--set',
        'shutdown.exitTimeoutSecs=20',
      ]),
    );
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const pod = deployment.spec.template.spec;
    const c = pod.containers[0];
    assert.equal(pod.terminationGracePeriodSeconds, 7 + 20 + 5);
    assert.ok(c.args.includes('--exit-delay-secs=7'));
    assert.ok(c.args.includes('--exit-timeout-secs=20'));
    assert.ok(c.args.includes('--model-repository=/models'));
    assert.equal(c.livenessProbe.httpGet.path, '/v2/health/live');
    assert.equal(c.readinessProbe.httpGet.path, '/v2/health/ready');
    assert.equal(c.startupProbe.httpGet.path, '/v2/health/ready');
    // The probes go to the health port, which the container declares and the server is told to serve.
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe])
      assert.equal(probe.httpGet.port, 'health');
    assert.ok(c.args.includes('--http-health-port=8003'));
    assert.ok(
      c.ports.some(
        (p: { name: string; containerPort: number }) => p.name === 'health' && p.containerPort === 8003,
      ),
    );
    assert.ok(pod.volumes.some((v) => v.emptyDir?.medium === 'Memory'));
    // Every flag the chart passes is one Nereid accepts.
    assert.doesNotThrow(() => parseFlags(c.args));
  });

  it('probes the HTTP port when the health port is switched off', async () => {
    const docs = objects(
      await helmTemplate(CHART, [...VALUE_SETS['pvc (defaults)'], '--set', 'ports.health=0']),
    );
    const c = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[0];
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe])
      assert.equal(probe.httpGet.port, 'http');
    assert.ok(!c.args.some((a: string) => a.startsWith('--http-health-port')));
    assert.ok(!c.ports.some((p) => p.name === 'health'));
  });

  it('scales on the metric the prometheus-adapter rule serves', async () => {
    const docs = objects(
      await helmTemplate(CHART, [...VALUE_SETS['pvc (defaults)'], '--set', 'autoscaling.enabled=true']),
    );
    const hpa = docs.find((d) => d.kind === 'HorizontalPodAutoscaler')!;
    const adapter = parse(readFileSync(path.join(CHART, 'prometheus-adapter-values.yaml'), 'utf8')) as {
      rules: { custom: { name: { as: string }; metricsQuery: string }[] };
    };
    assert.equal(hpa.spec.metrics[0].pods.metric.name, adapter.rules.custom[0].name.as);
    assert.equal(
      docs.find((d) => d.kind === 'Deployment')!.spec.replicas,
      undefined,
      'the HPA owns replicas',
    );
  });

  it('says what is missing instead of rendering a broken object', async () => {
    const r = await run(t.helm!, ['template', 'rel', CHART, '--kube-version', t.k8sVersion]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /modelRepository\.pvc\.claimName is required/);
    const bad = await run(t.helm!, [
      'template',
      'rel',
      CHART,
      '--kube-version',
      t.k8sVersion,
      '--set',
      'modelRepository.source=nfs',
    ]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /must be pvc, configMap or bucket/);
  });
});

describe('KServe runtime', () => {
  const ours = path.join(ROOT, 'deploy/kserve/cluster-serving-runtime.yaml');
  const argsOf = (file: string): string[] => {
    const doc = parse(readFileSync(file, 'utf8')) as { spec: { containers: { args: string[] }[] } };
    return doc.spec.containers[0].args;
  };

  it(
    'validates with kubeconform -strict against KServe CRDs, and refuses a planted unknown field',
    { skip: missing(tools, ['kubeconform', 'schemas']) },
    async () => {
      const files = ['cluster-serving-runtime.yaml', 'inference-service.yaml'].map((f) =>
        readFileSync(path.join(ROOT, 'deploy/kserve', f), 'utf8'),
      );
      const result = await kubeconform(files.join('\n---\n'));
      assert.deepEqual(
        (result.resources ?? []).map((r) => r.msg),
        [],
      );
      assert.deepEqual(result.summary, { valid: 2, invalid: 0, errors: 0, skipped: 0 });
      const planted = files[1].replace(
        '      runtime: nereid',
        '      runtime: nereid\n      runtimeVersion2: x',
      );
      assert.notEqual(planted, files[1]);
      const bad = await kubeconform(planted);
      assert.equal(bad.summary.invalid, 1);
      assert.match(bad.resources?.[0]?.msg ?? '', /'runtimeVersion2' not allowed/);
    },
  );

  it('runs on the protocols and model formats the issue names', () => {
    const doc = parse(readFileSync(ours, 'utf8')) as {
      metadata: { name: string };
      spec: { protocolVersions: string[]; supportedModelFormats: { name: string }[] };
    };
    assert.equal(doc.metadata.name, 'nereid');
    assert.deepEqual(doc.spec.protocolVersions, ['v2', 'grpc-v2']);
    assert.deepEqual(doc.spec.supportedModelFormats.map((f) => f.name).sort(), ['onnx', 'python', 'triton']);
  });

  it("accepts our runtime's arguments as KServe passes them", () => {
    const { options } = parseFlags(argsOf(ours));
    assert.deepEqual(options.modelRepositories, ['/mnt/models']);
    assert.equal(options.grpcPort, 9000);
    assert.equal(options.httpPort, 8080);
    assert.equal(options.allowGrpc, true);
    assert.equal(options.allowHttp, true);
  });

  it(
    "accepts every flag of KServe's own Triton runtime (config/runtimes/kserve-tritonserver.yaml)",
    { skip: missing(tools, ['kserveDir']) },
    () => {
      const args = argsOf(path.join(t.kserveDir!, 'config/runtimes/kserve-tritonserver.yaml'));
      // That runtime's image has no entrypoint: the program's name comes first. Ours drops it.
      assert.equal(args[0], 'tritonserver');
      const { options, warnings } = parseFlags(args.slice(1));
      assert.deepEqual(options.modelRepositories, ['/mnt/models']);
      assert.deepEqual(warnings, [], 'no flag KServe passes is ignored');
      for (const arg of args.slice(1)) {
        const [flag, value] = arg.replace(/^--/, '').split('=');
        if (flag === 'grpc-port') assert.equal(options.grpcPort, Number(value));
        if (flag === 'http-port') assert.equal(options.httpPort, Number(value));
      }
    },
  );
});

describe('container image', () => {
  const dockerfile = path.join(ROOT, 'deploy/Dockerfile');

  it('passes hadolint, which flags a planted mistake', { skip: missing(tools, ['hadolint']) }, async () => {
    const clean = await run(t.hadolint!, [dockerfile]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-docker-'));
    try {
      const planted = path.join(dir, 'Dockerfile');
      writeFileSync(planted, readFileSync(dockerfile, 'utf8').replace('WORKDIR /opt/nereid', 'RUN cd /opt'));
      const bad = await run(t.hadolint!, [planted]);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stdout, /DL3003/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('declares what a cluster relies on', () => {
    const text = readFileSync(dockerfile, 'utf8');
    assert.match(text, /^USER 1000:1000$/m);
    assert.match(text, /^EXPOSE 8000 8001 8002$/m);
    assert.match(text, /^HEALTHCHECK .*\n.*\/v2\/health\/ready/m);
    assert.match(text, /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "\/usr\/local\/bin\/nereid-entrypoint"\]$/m);
    assert.equal((text.match(/^FROM /gm) ?? []).length, 2, 'multi-stage: build, then runtime');
  });

  it('entrypoint drops a leading tritonserver word and passes every other argument to nereid', async () => {
    // The image links `nereid` onto PATH; here a folder with the same link stands in for it.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-entry-'));
    try {
      symlinkSync(path.join(ROOT, 'bin/nereid.js'), path.join(dir, 'nereid'));
      const env = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` };
      const entry = path.join(ROOT, 'deploy/nereid-entrypoint.sh');
      for (const first of ['tritonserver', 'nereid']) {
        const r = await run('sh', [entry, first, '--help'], undefined, env);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /--model-repository/);
      }
      const direct = await run('sh', [entry, '--version'], undefined, env);
      assert.equal(direct.code, 0, direct.stderr);
      assert.match(direct.stdout, /^nereid \d/);
      const wrong = await run('sh', [entry, 'serve'], undefined, env);
      assert.equal(wrong.code, 2, 'any other word reaches nereid and is refused');
      assert.match(wrong.stderr, /unexpected argument 'serve'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
