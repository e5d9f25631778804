// The dashboard's routes over real sockets, without a browser (test/browser drives the page): the page and
// its files with their security headers, nothing outside the file table, --allow-dashboard=false, the
// `dashboard` restricted-API category, and a server description free of secrets.
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  EXAMPLES,
  makeRepository,
  removeRepository,
  request,
  startServer,
  type TestServer,
} from './harness.js';

describe('the dashboard routes', () => {
  let repo: string;
  let on: TestServer;
  let off: TestServer;
  let locked: TestServer;

  before(async () => {
    repo = makeRepository({});
    cpSync(path.join(EXAMPLES, 'simple'), path.join(repo, 'simple'), { recursive: true });
    const common = [`--model-repository=${repo}`, '--model-control-mode=explicit', '--load-model=simple'];
    on = await startServer([
      ...common,
      '--http-restricted-api=trace:Trace-Key=trace-secret',
      // TLS material paths are shown as set or not, never as paths (gRPC TLS stays off: only the paths matter).
      '--grpc-server-cert=/very/secret/path/cert.pem',
    ]);
    off = await startServer([...common, '--allow-dashboard=false']);
    locked = await startServer([
      ...common,
      '--http-restricted-api=dashboard:Dash-Key=d1',
      '--http-restricted-api=metadata:Meta-Key=m1',
      '--http-restricted-api=logging:Log-Key=l1',
    ]);
  });

  after(async () => {
    await on?.stop();
    await off?.stop();
    await locked?.stop();
    removeRepository(repo);
  });

  it('serves the page with a CSP that allows only its own files and origin, and no framing', async () => {
    const r = await request(`${on.url}/dashboard/`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
    const csp = r.headers.get('content-security-policy') ?? '';
    for (const d of [
      "default-src 'none'",
      "script-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      assert.ok(csp.includes(d), d);
    }
    assert.ok(!csp.includes('unsafe'), csp);
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.match(r.body.toString(), /<script type="module" src="main.js"><\/script>/);
    // Every file the page names is served.
    for (const file of [
      'main.js',
      'api.js',
      'dom.js',
      'charts.js',
      'tester.js',
      'style.css',
      'vendor/uPlot.iife.min.js',
    ]) {
      const f = await request(`${on.url}/dashboard/${file}`);
      assert.equal(f.status, 200, file);
    }
    // A second read with the ETag is a 304.
    const again = await request(`${on.url}/dashboard/`, {
      headers: { 'If-None-Match': r.headers.get('etag')! },
    });
    assert.equal(again.status, 304);
  });

  it('redirects /dashboard to /dashboard/, and answers 404 for anything not in its file table', async () => {
    const r = await fetch(`${on.url}/dashboard`, { redirect: 'manual' });
    assert.equal(r.status, 308);
    assert.equal(r.headers.get('location'), '/dashboard/');
    for (const p of [
      '/dashboard/../package.json',
      '/dashboard/%2e%2e/package.json',
      '/dashboard/..%2fpackage.json',
      '/dashboard/tsconfig.json',
      '/dashboard/index.html.bak',
      '/dashboard/.hidden.js',
      '/dashboard/vendor/uPlot.d.ts',
      '/dashboard/a/b/c.js',
      '/dashboardx',
    ]) {
      const f = await request(on.url + p);
      assert.equal(f.status, 404, p);
    }
  });

  it('is 404 everywhere with --allow-dashboard=false, and the v2 API is unchanged', async () => {
    for (const p of [
      '/dashboard',
      '/dashboard/',
      '/dashboard/main.js',
      '/dashboard/api/server',
      '/dashboard/api/metrics',
      '/dashboard/api/logs',
    ]) {
      assert.equal((await request(off.url + p)).status, 404, p);
    }
    assert.equal((await request(`${off.url}/v2/health/ready`)).status, 200);
  });

  it('describes the server without restriction values or TLS paths', async () => {
    const r = await request(`${on.url}/dashboard/api/server`);
    assert.equal(r.status, 200);
    const text = r.body.toString();
    assert.ok(!text.includes('trace-secret'));
    assert.ok(!text.includes('/very/secret/path'));
    const info = r.json<{
      restrictedApis: object;
      modelControlMode: string;
      options: Record<string, unknown>;
    }>();
    assert.deepEqual(info.restrictedApis, { trace: 'Trace-Key' });
    assert.equal(info.modelControlMode, 'explicit');
    assert.equal(info.options.grpcServerCert, '(set)');
    assert.equal(info.options.httpServerCert, '');
    assert.deepEqual(info.options.modelRepositories, [repo]);
  });

  it('closes the page with the dashboard category, and its server description with metadata too', async () => {
    assert.equal((await request(`${locked.url}/dashboard/`)).status, 403);
    assert.equal((await request(`${locked.url}/dashboard/`, { headers: { 'Dash-Key': 'd1' } })).status, 200);
    const onlyDash = await request(`${locked.url}/dashboard/api/server`, { headers: { 'Dash-Key': 'd1' } });
    assert.equal(onlyDash.status, 403);
    assert.deepEqual(onlyDash.json(), { error: "This API is restricted, expecting header 'Meta-Key'" });
    const both = await request(`${locked.url}/dashboard/api/server`, {
      headers: { 'Dash-Key': 'd1', 'Meta-Key': 'm1' },
    });
    assert.equal(both.status, 200);
    // The metrics text needs the dashboard's header only while statistics are open.
    assert.equal(
      (await request(`${locked.url}/dashboard/api/metrics`, { headers: { 'Dash-Key': 'd1' } })).status,
      200,
    );
  });

  it('serves the last log lines as JSON fields, with no restriction value in them', async () => {
    const r = await request(`${on.url}/dashboard/api/logs`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const { lines } = r.json<{ lines: { seq: number; level: string; file: string; message: string }[] }>();
    assert.ok(lines.length > 0 && lines.length <= 500);
    // The server logged simple's load; lines come oldest first, numbered.
    assert.ok(
      lines.some((l) => l.level === 'INFO' && l.message.includes('simple')),
      JSON.stringify(lines),
    );
    assert.ok(lines.every((l, i) => i === 0 || l.seq > lines[i - 1].seq));
    assert.ok(!r.body.toString().includes('trace-secret'));
  });

  it('closes the log lines with the dashboard category and the logging one', async () => {
    const onlyDash = await request(`${locked.url}/dashboard/api/logs`, { headers: { 'Dash-Key': 'd1' } });
    assert.equal(onlyDash.status, 403);
    assert.deepEqual(onlyDash.json(), { error: "This API is restricted, expecting header 'Log-Key'" });
    const both = await request(`${locked.url}/dashboard/api/logs`, {
      headers: { 'Dash-Key': 'd1', 'Log-Key': 'l1' },
    });
    assert.equal(both.status, 200);
  });
});
