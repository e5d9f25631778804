/**
 * Object-store repository benchmark (issue 14): the time from start to ready for N small models (the
 * identity ONNX model) served from local disk and from a local S3 server (moto_server, as
 * scripts/setup-storage-servers.sh installs it), alternated round by round so machine noise hits both
 * alike; then, on the S3 repository, the time for one changed model to be served again: in poll mode (the
 * change written to the bucket → the new version READY, which includes waiting for the next poll) and by an
 * explicit load request (the reload alone: listing, download, load).
 *
 * Usage: node dist/bench/object-storage.js [--models 20] [--rounds 5] [--out <file.json>]
 * Goal: S3 start-up within 2× of local for small models.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { FIXTURES, post, waitFor } from '../test/integration/harness.js';
import { seed } from '../test/integration/storage/conformance.js';
import {
  identityConfig,
  identityModel,
  readyVersions,
  startWith,
} from '../test/integration/storage/models.js';
import { startStore, unavailable } from '../test/integration/storage/stores.js';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '5' },
    out: { type: 'string' },
  },
});
const count = Number(values.models);
const rounds = Number(values.rounds);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

async function main(): Promise<void> {
  const why = unavailable('s3');
  if (why) throw new Error(`moto_server is not available: ${why} (run scripts/setup-storage-servers.sh)`);
  const files: Record<string, string | Buffer> = {};
  for (let i = 0; i < count; i++) Object.assign(files, identityModel(`m${String(i).padStart(2, '0')}`));
  const local = await startStore('local');
  const s3 = await startStore('s3');
  const mount = mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-mount-'));
  const settings = { ...s3.cloudStorage, mountDirectories: { s3: mount } };
  try {
    const localPrefix = await seed(local, files);
    const s3Prefix = await seed(s3, files);
    const startup = { local: [] as number[], s3: [] as number[] };
    const measure = async (kind: 'local' | 's3'): Promise<void> => {
      const t = process.hrtime.bigint();
      const s =
        kind === 'local'
          ? await startWith({}, [`--model-repository=${local.url(localPrefix)}`])
          : await startWith(settings, [`--model-repository=${s3.url(s3Prefix)}`]);
      startup[kind].push(ms(t));
      await s.stop();
    };
    await measure('local'); // warm-up: the first start pays for loading modules and the S3 SDK
    await measure('s3');
    startup.local.length = 0;
    startup.s3.length = 0;
    for (let r = 0; r < rounds; r++) {
      const order: ('local' | 's3')[] = r % 2 ? ['s3', 'local'] : ['local', 's3'];
      for (const k of order) await measure(k);
    }

    // One changed model: a second version and a policy serving both.
    const model = 'm00';
    const onnx = readFileSync(path.join(FIXTURES, 'identity_fp32.onnx'));
    const pollMs: number[] = [];
    const loadMs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const prefix = await seed(s3, files);
      const polled = await startWith(settings, [
        `--model-repository=${s3.url(prefix)}`,
        '--model-control-mode=poll',
        '--repository-poll-secs=1',
      ]);
      try {
        const t = process.hrtime.bigint();
        await s3.put(`${prefix}/${model}/2/model.onnx`, onnx);
        await s3.put(`${prefix}/${model}/config.pbtxt`, identityConfig(model, 'version_policy: { all { } }'));
        await waitFor(async () => (await readyVersions(polled.url, model)).join() === '1,2', 120_000);
        pollMs.push(ms(t));
      } finally {
        await polled.stop();
      }
      const explicit = await startWith(settings, [
        `--model-repository=${s3.url(prefix)}`,
        '--model-control-mode=explicit',
        '--load-model=*',
      ]);
      try {
        await s3.put(`${prefix}/${model}/config.pbtxt`, identityConfig(model));
        const t = process.hrtime.bigint();
        const res = await post(`${explicit.url}/v2/repository/models/${model}/load`, {});
        if (res.status !== 200) throw new Error(`reload failed: ${res.body.toString()}`);
        loadMs.push(ms(t));
      } finally {
        await explicit.stop();
      }
    }

    const result = {
      models: count,
      rounds,
      loadavg: os.loadavg(),
      startupMs: { local: median(startup.local), s3: median(startup.s3) },
      startupRatio: median(startup.s3) / median(startup.local),
      pollReloadMs: { median: median(pollMs), pollSecs: 1 },
      explicitReloadMs: { median: median(loadMs) },
      samples: { startup, pollMs, loadMs },
    };
    const r1 = (x: number): string => x.toFixed(0);
    process.stdout.write(
      [
        `object-storage bench: ${count} identity models, ${rounds} rounds, load ${os
          .loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}`,
        `  start-up to ready, median: local ${r1(result.startupMs.local)} ms, S3 (moto) ${r1(result.startupMs.s3)} ms, ratio ${result.startupRatio.toFixed(2)} (goal ≤ 2)`,
        `  one changed model, poll mode (1 s interval), change → new version READY: median ${r1(result.pollReloadMs.median)} ms`,
        `  one changed model, explicit load request (list + download + load): median ${r1(result.explicitReloadMs.median)} ms`,
        '',
      ].join('\n'),
    );
    if (values.out) writeFileSync(values.out, JSON.stringify(result, null, 2));
  } finally {
    await s3.stop();
    await local.stop();
    rmSync(mount, { recursive: true, force: true });
  }
}

await main();
