import { createHash } from "node:crypto";

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Stable 32-bit FNV-1a hash of a string, for deterministic shard assignment. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A name-based UUID (version 5 layout, SHA-1 of a fixed namespace and the key): stable across runs
 * and machines, and a valid Qdrant point id.
 */
const NAMESPACE = Buffer.from("6f1c1b0e7a2d4f5e9b3c2a1d0e9f8a7b", "hex");
export function pointIdFor(key: string): string {
  const h = createHash("sha1").update(NAMESPACE).update(key, "utf8").digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
