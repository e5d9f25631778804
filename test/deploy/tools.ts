/**
 * The deployment tests' view of the tools scripts/setup-deploy-tools.sh provisions (helm, kubeconform and
 * its schema folder, hadolint, haproxy, prometheus): their paths from .cache/deploy-tools.env, or why a test
 * must skip. `npm test` runs the setup first and fails if it could not install what this machine can have,
 * so a skip here means the machine cannot have the tool (the message says which and why).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const CHART = path.join(ROOT, 'deploy/helm/nereid');

export interface DeployTools {
  helm?: string;
  kubeconform?: string;
  schemas?: string;
  k8sVersion: string;
  kserveDir?: string;
  hadolint?: string;
  haproxy?: string;
  prometheus?: string;
  /** What setup-deploy-tools.sh could not provide on this machine, and why. */
  skipped: string;
}

export function deployTools(): DeployTools | string {
  const file = path.join(ROOT, '.cache/deploy-tools.env');
  if (!existsSync(file))
    return 'no .cache/deploy-tools.env: run scripts/setup-deploy-tools.sh (npm test does)';
  const env = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) env.set(m[1], m[2]);
  }
  const get = (k: string): string | undefined => env.get(k) || undefined;
  return {
    helm: get('NEREID_HELM'),
    kubeconform: get('NEREID_KUBECONFORM'),
    schemas: get('NEREID_K8S_SCHEMAS'),
    k8sVersion: get('NEREID_K8S_VERSION') ?? '1.34.4',
    kserveDir: get('NEREID_KSERVE_DIR'),
    hadolint: get('NEREID_HADOLINT'),
    haproxy: get('NEREID_HAPROXY'),
    prometheus: get('NEREID_PROMETHEUS'),
    skipped: get('NEREID_DEPLOY_SKIP') ?? '',
  };
}

/** The reason to skip when any of the named tools is missing, else undefined. */
export function missing(tools: DeployTools | string, names: (keyof DeployTools)[]): string | undefined {
  if (typeof tools === 'string') return tools;
  const absent = names.filter((n) => !tools[n]);
  if (absent.length === 0) return undefined;
  return `not available here: ${absent.join(', ')}${tools.skipped ? ` (${tools.skipped})` : ''}`;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion (with optional stdin), collecting its output. */
export function run(
  cmd: string,
  args: string[],
  input?: string,
  env?: NodeJS.ProcessEnv,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}
