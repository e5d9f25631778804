// Which headers the forwarder hands to models, under Triton's rules (RE2, `(?i)` before the pattern,
// partial match, -bin metadata decoded) and Nereid's one addition (server-consumed names stay out).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeaderForwarder, compileForwardPattern, withForwarded } from './header-forward.js';

/** The forwarded parameters as a plain object (the forwarder builds them without a prototype). */
const plain = (p: Record<string, string> | undefined) => (p === undefined ? undefined : { ...p });
const http = (pattern: string, raw: string[]) => plain(new HeaderForwarder(pattern, 'http').parameters(raw));
const grpc = (pattern: string, raw: string[]) => plain(new HeaderForwarder(pattern, 'grpc').parameters(raw));

describe('HeaderForwarder', () => {
  it('forwards matching names anywhere in the name, case-insensitively, keeping the name as sent', () => {
    assert.deepEqual(http('PREFIX_.*', ['Prefix_A', '1', 'prefix_b', '2', 'X-PREFIX_C', '3', 'Other', '4']), {
      Prefix_A: '1',
      prefix_b: '2',
      'X-PREFIX_C': '3',
    });
    assert.equal(http('PREFIX_.*', ['Other', '4']), undefined);
    assert.deepEqual(http('^x-a$', ['x-a', '1', 'x-ab', '2']), { 'x-a': '1' });
  });

  it('is case-sensitive after (?-i), as with RE2 in Triton', () => {
    assert.deepEqual(http('(?-i)PREFIX_.*', ['PREFIX_A', '1', 'prefix_b', '2']), { PREFIX_A: '1' });
  });

  it('forwards every header for an empty pattern (Triton’s pattern is then just "(?i)")', () => {
    assert.deepEqual(http('', ['Host', 'h', 'X-A', 'a']), { Host: 'h', 'X-A': 'a' });
  });

  it('keeps the last of repeated headers, as a Python model reading Triton’s parameters does', () => {
    assert.deepEqual(http('x-', ['x-b', 'one', 'x-b', 'two']), { 'x-b': 'two' });
  });

  it('cannot be made to set an object prototype by a header named __proto__', () => {
    const p = new HeaderForwarder('.*', 'http').parameters(['__proto__', 'x']);
    assert.equal(Object.getPrototypeOf(p), null);
    assert.equal(p?.['__proto__'], 'x');
    const request: { parameters?: Record<string, string> } = { parameters: {} };
    const merged = withForwarded(request, p).parameters;
    assert.equal(Object.getPrototypeOf(merged), Object.prototype);
    assert.equal(Object.getOwnPropertyDescriptor(merged, '__proto__')?.value, 'x');
  });

  it('never forwards names the server consumes itself', () => {
    const raw = ['sequence_id', '7', 'priority', '1', 'timeout', '5', 'sequence_start', 'true'];
    raw.push('sequence_end', 'true', 'binary_data_output', 'true', 'triton_x', 'y', 'Sequence_Id', 'ok');
    assert.deepEqual(http('.*', raw), { Sequence_Id: 'ok' });
  });

  it('passes HTTP header bytes on as UTF-8 text', () => {
    const onWire = Buffer.from('café', 'utf8').toString('latin1');
    assert.deepEqual(http('x-', ['x-v', onWire]), { 'x-v': 'café' });
  });

  it('leaves gRPC transport metadata out, forwards the rest, user-agent included', () => {
    const raw = [':path', '/p', ':authority', 'a', 'te', 'trailers', 'content-type', 'application/grpc'];
    raw.push('grpc-accept-encoding', 'gzip', 'grpc-timeout', '1S', 'user-agent', 'ua', 'x-custom', 'c');
    assert.deepEqual(grpc('.*', raw), { 'user-agent': 'ua', 'x-custom': 'c' });
  });

  it('decodes -bin metadata and stops at its first NUL byte, as Triton passes a C string', () => {
    const b64 = (b: Buffer) => b.toString('base64');
    assert.deepEqual(
      grpc('-bin$', [
        'a-bin',
        b64(Buffer.from('abcé', 'utf8')),
        'b-bin',
        b64(Buffer.from([0x41, 0, 0x42])),
        'c-bin',
        b64(Buffer.from([0, 1])),
      ]),
      { 'a-bin': 'abcé', 'b-bin': 'A', 'c-bin': '' },
    );
  });

  it('answers the same for names it has seen many times and after its cache was cleared', () => {
    const f = new HeaderForwarder('^keep', 'http');
    for (let i = 0; i < 1000; i++) {
      assert.deepEqual(plain(f.parameters([`drop-${i}`, 'x', 'keep-me', String(i)])), {
        'keep-me': String(i),
      });
    }
  });

  it('matches a hostile name in linear time (RE2 has no backtracking)', () => {
    // (a+)+$ backtracks exponentially in a backtracking engine on this input; here it returns at once.
    const name = 'a'.repeat(5000) + '!';
    assert.equal(http('(a+)+$', [name, 'v']), undefined);
  });
});

describe('compileForwardPattern', () => {
  it('refuses what RE2 refuses, naming the flag', () => {
    assert.throws(() => compileForwardPattern('http-header-forward-pattern', '['), {
      message: /^--http-header-forward-pattern: '\[' is not a valid RE2 regular expression: /,
    });
  });
});

describe('withForwarded', () => {
  it('adds forwarded headers over body parameters of the same name, and leaves a request alone otherwise', () => {
    const request = { modelName: 'm', inputs: [], parameters: { a: 1, b: 'body' } };
    assert.equal(withForwarded(request, undefined), request);
    assert.deepEqual(withForwarded(request, { b: 'header', c: 'x' }).parameters, {
      a: 1,
      b: 'header',
      c: 'x',
    });
    const bare: { modelName: string; parameters?: Record<string, string> } = { modelName: 'm' };
    assert.deepEqual(withForwarded(bare, { c: 'x' }).parameters, { c: 'x' });
  });
});
