// The per-address connection share: which addresses count as one, and places taken and given back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionShare, addressKey } from './connection-share.js';

void describe('ConnectionShare', () => {
  it('counts IPv4 addresses as they are, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
    assert.equal(addressKey('10.1.2.3'), '10.1.2.3');
    assert.equal(addressKey('::ffff:10.1.2.3'), '10.1.2.3');
    assert.equal(addressKey('2001:db8:0:1::5'), '2001:db8:0:1::/64');
    assert.equal(addressKey('2001:db8:0:1:ffff:1:2:3'), '2001:db8:0:1::/64');
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
    assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  });

  it('refuses a place over the share, gives one back on release, and counts nothing at 0', () => {
    const share = new ConnectionShare(2);
    const a = share.take('10.0.0.1');
    const b = share.take('::ffff:10.0.0.1');
    assert.equal(typeof a, 'string');
    assert.equal(share.take('10.0.0.1'), null, 'the third of one address');
    assert.equal(typeof share.take('10.0.0.2'), 'string', 'another address');
    assert.equal(typeof share.take('2001:db8:0:1::1'), 'string');
    assert.equal(typeof share.take('2001:db8:0:1::2'), 'string');
    assert.equal(share.take('2001:db8:0:1::3'), null, 'one /64 is one address');
    share.release(a);
    assert.equal(share.held('10.0.0.1'), 1);
    assert.equal(typeof share.take('10.0.0.1'), 'string');
    share.release(b);
    share.release(null);
    share.release(undefined);
    assert.equal(share.take(undefined), undefined, 'a socket without an address is not limited');
    const none = new ConnectionShare(0);
    for (let i = 0; i < 5; i++) assert.equal(none.take('10.0.0.1'), undefined);
  });
});
