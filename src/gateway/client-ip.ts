/**
 * Which address a request comes from, for the per-IP rate limit and the access log.
 *
 * The socket peer is the client unless it is one of our trusted proxies; then X-Forwarded-For is
 * walked from the right, skipping trusted hops, and the first untrusted address wins. Entries left
 * of it were written by the client itself and could be anything, so they are never used: a caller
 * cannot pick its own rate-limit key by sending a forged header. Done here rather than with
 * express's `trust proxy` so the rule is explicit and tested.
 */
import { BlockList, isIP } from "node:net";

const MAPPED_V4_DOTTED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;
const MAPPED_V4_HEX = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;

/**
 * Canonical form of an address: IPv4-mapped IPv6 (`::ffff:1.2.3.4`, `::ffff:102:304`) becomes plain
 * IPv4, IPv6 is lower-cased with any zone id dropped. Returns null for anything that is not an IP.
 */
export function normalizeIp(raw: string): string | null {
  let s = raw.trim();
  if (s.startsWith("[")) {
    // "[v6]" or "[v6]:port"
    const end = s.indexOf("]");
    if (end < 0) return null;
    s = s.slice(1, end);
  } else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d+$/.test(s)) {
    s = s.slice(0, s.lastIndexOf(":")); // "v4:port"
  }
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  s = s.toLowerCase();
  const dotted = MAPPED_V4_DOTTED.exec(s);
  if (dotted && isIP(dotted[1]!) === 4) return dotted[1]!;
  const hex = MAPPED_V4_HEX.exec(s);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  const family = isIP(s);
  if (family === 4) return s;
  // The WHATWG URL serialiser gives the canonical compressed IPv6 form, so equal addresses share a key.
  if (family === 6) return new URL(`http://[${s}]/`).hostname.slice(1, -1);
  return null;
}

/**
 * The per-IP rate-limit key. IPv6 is keyed by its /64, since one subscriber commonly holds a whole
 * /64 and could otherwise rotate addresses to multiply its allowance.
 */
export function rateLimitKeyForIp(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const full = expandIpv6(ip);
  return full
    ? `${full
        .slice(0, 4)
        .map((h) => h.replace(/^0+(?=.)/, ""))
        .join(":")}::/64`
    : ip;
}

/** The eight hextets of an IPv6 address (no embedded IPv4 after normalisation). */
function expandIpv6(ip: string): string[] | null {
  const [head, tail, ...rest] = ip.split("::");
  if (rest.length > 0) return null;
  const h = head ? head.split(":") : [];
  const t = tail !== undefined && tail !== "" ? tail.split(":") : [];
  if (tail === undefined && h.length !== 8) return null;
  const zeros = 8 - h.length - t.length;
  if (zeros < 0) return null;
  return [...h, ...Array<string>(tail === undefined ? 0 : zeros).fill("0"), ...t];
}

export interface TrustedProxies {
  /** True when `ip` (any form normalizeIp accepts) is a trusted proxy. */
  has(ip: string): boolean;
  readonly size: number;
}

/**
 * Parses trusted proxy entries: single addresses or CIDRs, IPv4 or IPv6 (an IPv4-mapped entry is
 * treated as IPv4). Throws on a malformed entry so a typo fails at start-up, not silently.
 */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  const list = new BlockList();
  let size = 0;
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    const slash = entry.indexOf("/");
    const addrPart = slash >= 0 ? entry.slice(0, slash) : entry;
    const addr = normalizeIp(addrPart);
    if (!addr) throw new Error(`trusted proxy "${entry}": not an IP address or CIDR`);
    const family = isIP(addr) === 4 ? "ipv4" : "ipv6";
    if (slash < 0) {
      list.addAddress(addr, family);
    } else {
      const prefixText = entry.slice(slash + 1);
      let prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
      // "::ffff:10.0.0.0/104" style: the mapped prefix counts the 96 mapping bits.
      if (family === "ipv4" && isIP(addrPart.replace(/^\[|\]$/g, "")) === 6) prefix -= 96;
      const max = family === "ipv4" ? 32 : 128;
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) throw new Error(`trusted proxy "${entry}": bad prefix length`);
      list.addSubnet(addr, prefix, family);
    }
    size++;
  }
  return {
    size,
    has(ip: string): boolean {
      const n = normalizeIp(ip);
      if (!n) return false;
      return list.check(n, isIP(n) === 4 ? "ipv4" : "ipv6");
    },
  };
}

/**
 * The client address. `forwardedFor` is the raw X-Forwarded-For value (node joins repeated
 * headers with ", "). An unparseable hop stops the walk at the last trusted address we have.
 */
export function resolveClientIp(socketAddress: string | undefined, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  let current = normalizeIp(socketAddress ?? "") ?? "unknown";
  if (trusted.size === 0 || !trusted.has(current) || forwardedFor === undefined) return current;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor)
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h.length > 0);
  while (trusted.has(current) && hops.length > 0) {
    const next = normalizeIp(hops.pop() as string);
    if (!next) break;
    current = next;
  }
  return current;
}
