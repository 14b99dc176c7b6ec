import assert from "node:assert/strict";
import { test } from "vitest";
import { normalizeIp, parseTrustedProxies, rateLimitKeyForIp, resolveClientIp } from "./client-ip.js";

test("normalizeIp: mapped IPv4, ports, brackets, zones, canonical IPv6, garbage", () => {
  assert.equal(normalizeIp("10.1.2.3"), "10.1.2.3");
  assert.equal(normalizeIp("::ffff:10.1.2.3"), "10.1.2.3");
  assert.equal(normalizeIp("::FFFF:10.1.2.3"), "10.1.2.3");
  assert.equal(normalizeIp("::ffff:a01:203"), "10.1.2.3");
  assert.equal(normalizeIp(" 10.1.2.3:5555 "), "10.1.2.3");
  assert.equal(normalizeIp("[2001:db8::1]:443"), "2001:db8::1");
  assert.equal(normalizeIp("2001:DB8:0:0:0:0:0:1"), "2001:db8::1");
  assert.equal(normalizeIp("fe80::1%eth0"), "fe80::1");
  assert.equal(normalizeIp("::1"), "::1");
  assert.equal(normalizeIp("not-an-ip"), null);
  assert.equal(normalizeIp(""), null);
  assert.equal(normalizeIp("999.1.1.1"), null);
  assert.equal(normalizeIp("unknown"), null);
});

test("parseTrustedProxies: addresses and CIDRs of both families; mapped socket addresses match IPv4 entries", () => {
  const t = parseTrustedProxies(["10.0.0.0/8", "192.168.1.10", "fd00::/8", "::1", " "]);
  assert.equal(t.size, 4);
  assert.ok(t.has("10.200.3.4"));
  assert.ok(t.has("::ffff:10.200.3.4"));
  assert.ok(t.has("192.168.1.10"));
  assert.ok(!t.has("192.168.1.11"));
  assert.ok(t.has("fd12:3456::9"));
  assert.ok(t.has("::1"));
  assert.ok(!t.has("2001:db8::1"));
  assert.ok(!t.has("11.0.0.1"));
  assert.ok(!t.has("garbage"));
  const mapped = parseTrustedProxies(["::ffff:172.16.0.0/108"]);
  assert.ok(mapped.has("172.16.5.5"));
  assert.ok(!mapped.has("172.32.0.1"));
});

test("parseTrustedProxies: malformed entries throw", () => {
  assert.throws(() => parseTrustedProxies(["10.0.0.0/33"]), /bad prefix/);
  assert.throws(() => parseTrustedProxies(["10.0.0.0/x"]), /bad prefix/);
  assert.throws(() => parseTrustedProxies(["proxy.local"]), /not an IP/);
  assert.throws(() => parseTrustedProxies(["fd00::/129"]), /bad prefix/);
});

test("resolveClientIp: no trusted proxies → the socket address, X-Forwarded-For ignored", () => {
  const none = parseTrustedProxies([]);
  assert.equal(resolveClientIp("203.0.113.7", "1.2.3.4", none), "203.0.113.7");
  assert.equal(resolveClientIp("::ffff:203.0.113.7", undefined, none), "203.0.113.7");
  assert.equal(resolveClientIp(undefined, "1.2.3.4", none), "unknown");
});

test("resolveClientIp: untrusted peer → its own address even with a forged header", () => {
  const t = parseTrustedProxies(["10.0.0.0/8"]);
  assert.equal(resolveClientIp("198.51.100.1", "1.1.1.1", t), "198.51.100.1");
});

test("resolveClientIp: trusted peer → right-most untrusted hop of X-Forwarded-For", () => {
  const t = parseTrustedProxies(["10.0.0.0/8", "2001:db8:ffff::/48"]);
  // client forged "6.6.6.6"; the real client 203.0.113.9 was appended by our first proxy 10.0.0.2.
  assert.equal(resolveClientIp("10.0.0.1", "6.6.6.6, 203.0.113.9, 10.0.0.2", t), "203.0.113.9");
  assert.equal(resolveClientIp("::ffff:10.0.0.1", "203.0.113.9", t), "203.0.113.9");
  assert.equal(resolveClientIp("2001:db8:ffff::1", "2001:db8:1::5", t), "2001:db8:1::5");
  assert.equal(resolveClientIp("10.0.0.1", ["6.6.6.6", "203.0.113.9:1234"], t), "203.0.113.9");
  assert.equal(resolveClientIp("10.0.0.1", "[2001:db8:2::7]:443", t), "2001:db8:2::7");
});

test("resolveClientIp: all hops trusted → the left-most; missing or junk header → the last trusted hop", () => {
  const t = parseTrustedProxies(["10.0.0.0/8"]);
  assert.equal(resolveClientIp("10.0.0.1", "10.0.0.3, 10.0.0.2", t), "10.0.0.3");
  assert.equal(resolveClientIp("10.0.0.1", undefined, t), "10.0.0.1");
  assert.equal(resolveClientIp("10.0.0.1", "", t), "10.0.0.1");
  assert.equal(resolveClientIp("10.0.0.1", "1.2.3.4, bogus, 10.0.0.2", t), "10.0.0.2");
});

test("rateLimitKeyForIp: IPv4 as is, IPv6 by /64", () => {
  assert.equal(rateLimitKeyForIp("203.0.113.9"), "203.0.113.9");
  assert.equal(rateLimitKeyForIp("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(rateLimitKeyForIp("2001:db8:1:2:bbbb::9"), "2001:db8:1:2::/64");
  assert.equal(rateLimitKeyForIp("::1"), "0:0:0:0::/64");
  assert.equal(rateLimitKeyForIp("unknown"), "unknown");
});
