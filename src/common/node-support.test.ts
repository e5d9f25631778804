// The Node.js versions Nereid supports are said in three places that must agree: package.json's engines
// (what npm warns about), the README's first screen, and the Node the tests run on (CI's).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };
const readme = readFileSync(new URL('README.md', root), 'utf8');

type Version = [number, number, number];
const parse = (v: string): Version => v.replace(/^v/, '').split('.').map(Number) as Version;
const compare = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** The `^x.y.z` and `>=x.y.z` alternatives of an engines range (all this project uses). */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split('||').some((alt) => {
    const m = /^\s*(\^|>=)(\d+\.\d+\.\d+)\s*$/.exec(alt);
    assert.ok(m, `an engines alternative this check reads: '${alt}'`);
    const floor = parse(m[2]);
    return compare(v, floor) >= 0 && (m[1] === '>=' || v[0] === floor[0]);
  });
}

test("engines: the LTS lines 22 and 24, Node 20.19+ still, not the odd lines; the tests' Node is in it", () => {
  const range = pkg.engines.node;
  for (const v of ['22.12.0', '22.20.0', '24.0.0', '24.11.1', '20.19.0', '26.0.0'])
    assert.ok(satisfies(v, range), v);
  for (const v of ['18.20.0', '20.18.0', '21.7.0', '23.5.0', '22.11.0']) assert.ok(!satisfies(v, range), v);
  assert.ok(
    satisfies(process.version, range),
    `the Node running the tests (${process.version}) is supported`,
  );
});

test("the README's first screen names the supported lines and the Node CI runs", () => {
  const first = readme.slice(0, readme.indexOf('```'));
  assert.match(first, /Node\.js 22 or 24/);
  const ci = /CI runs Node (\d+)\.(\d+)/.exec(first);
  assert.ok(ci, 'the README says which Node CI runs');
  // CI's Node is a supported one (a developer's Node may differ: that is checked against engines above).
  assert.ok(satisfies(`${ci[1]}.${ci[2]}.0`, pkg.engines.node), `CI's Node ${ci[1]}.${ci[2]} is supported`);
});
