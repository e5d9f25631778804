// Which server answers: GET /v2 and gRPC ServerMetadata report --id (Triton's default "triton", which
// Triton's own examples check), while every HTTP reply's Server header, every gRPC reply's `server`
// metadata and the start-up log say it is Nereid.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { GrpcClient } from '../../src/client/index.js';
import { packageVersion } from '../../src/compose/compose.js';
import { EXAMPLES, post, request, startServer, type TestServer } from './harness.js';

const PRODUCT = `nereid/${packageVersion()}`;

/** The response headers of one unary gRPC call (ServerLive, an empty request message). */
async function grpcHeaders(port: number): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ServerLive',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('response', (headers) => resolve(headers));
      stream.on('error', reject);
      stream.resume();
      stream.end(Buffer.alloc(5)); // uncompressed, length 0
    });
  } finally {
    session.close();
  }
}

for (const id of [undefined, 'my-server']) {
  describe(`server identity (${id === undefined ? 'default --id' : `--id=${id}`})`, () => {
    let s: TestServer;
    let grpc: GrpcClient;
    const name = id ?? 'triton';
    before(async () => {
      s = await startServer([
        `--model-repository=${EXAMPLES}`,
        '--model-control-mode=explicit',
        ...(id === undefined ? [] : [`--id=${id}`]),
      ]);
      grpc = new GrpcClient(`127.0.0.1:${s.running.grpc!.port}`);
    });
    after(async () => {
      grpc.close();
      await s.stop();
    });

    it('GET /v2 and gRPC ServerMetadata report the id as the name', async () => {
      const meta = (await request(`${s.url}/v2`)).json<{ name: string; version: string }>();
      assert.equal(meta.name, name);
      assert.equal(meta.version, packageVersion());
      assert.equal((await grpc.serverMetadata()).name, name);
    });

    it('every HTTP reply says it is Nereid in its Server header, errors and 404s included', async () => {
      for (const r of [
        await request(`${s.url}/v2`),
        await request(`${s.url}/v2/health/live`),
        await request(`${s.url}/v2/models/no_such_model`),
        await request(`${s.url}/not/a/route`),
        await post(`${s.url}/v2/models/simple/infer`, '{not json'),
      ]) {
        assert.equal(r.headers.get('server'), PRODUCT);
      }
    });

    it('every gRPC reply carries the `server` metadata key', async () => {
      const headers = await grpcHeaders(s.running.grpc!.port);
      assert.equal(headers[':status'], 200);
      assert.equal(headers.server, PRODUCT);
    });

    it('the start-up log names the product and the id', () => {
      assert.ok(
        s.logs.some((l) => l.includes(`Nereid ${packageVersion()} starting, server id '${name}'`)),
        s.logs.join('\n'),
      );
    });
  });
}
