// STUB: replaced by the lexical-index work. Signatures are the contract.
import type { Bitset } from "./bitset.js";
import type { Hit } from "./types.js";

export interface LexicalDoc {
  readonly name: string;
  readonly description: string | null;
  readonly topics: readonly string[];
  readonly readme: string | null;
}

export class LexicalIndex {
  readonly docCount: number = 0;
  static build(docs: readonly LexicalDoc[]): LexicalIndex { throw new Error("not implemented"); }
  /** Top-k rows by BM25F score (> 0) among rows allowed by `allow` (null = all), best first. */
  search(text: string, k: number, allow: Bitset | null): Hit[] { throw new Error("not implemented"); }
  serialize(): Uint8Array { throw new Error("not implemented"); }
  static deserialize(bytes: Uint8Array): LexicalIndex { throw new Error("not implemented"); }
}
