// STUB: replaced by the store-engine work. Signatures are the contract.
import type { RepoPayload } from "../../dataset/record.js";
import type { Filter } from "../filter.js";
import type { PointId } from "../types.js";
import type { Bitset } from "./bitset.js";

export class PayloadIndex {
  static build(ids: readonly PointId[], payloads: readonly RepoPayload[]): PayloadIndex { throw new Error("not implemented"); }
  /**
   * The rows that satisfy `filter` (Qdrant semantics, see ../filter.ts), or null when the filter is
   * absent or places no constraint (every row passes). Throws ReposearchError(VALIDATION_ERROR) on a
   * malformed filter.
   */
  evaluate(filter: Filter | null | undefined): Bitset | null { throw new Error("not implemented"); }
}
