/**
 * The embedded store's RankColumns (see store/types.ts): two 32-bit words per row, adjacent so that
 * one cache line serves a candidate: stars, then the category code (high 8 bits) over the language
 * code (low 24 bits). Built once per segment from the payloads (~10 ms for 200k rows).
 */
import type { RepoPayload } from "../../dataset/record.js";
import type { RankColumns } from "../types.js";

const LANGUAGE_NULL = 0xff_ffff;
const CATEGORY_NULL = 0xff;
const MAX_STARS = 0xffff_ffff;

export class PackedRankColumns implements RankColumns {
  private constructor(
    private readonly words: Uint32Array,
    private readonly languageCodes: ReadonlyMap<string, number>,
    private readonly categoryCodes: ReadonlyMap<string, number>,
  ) {}

  /**
   * Null when the payloads cannot be packed exactly (stars that are not integers up to 2^32 − 1, or
   * more distinct languages or categories than the codes hold); ranking then reads the payloads.
   */
  static build(payloads: readonly RepoPayload[]): PackedRankColumns | null {
    const words = new Uint32Array(payloads.length * 2);
    const languages = new Map<string, number>();
    const categories = new Map<string, number>();
    for (let row = 0; row < payloads.length; row++) {
      const p = payloads[row]!;
      const stars = p.stars !== null && p.stars > 0 ? p.stars : 0;
      if (!Number.isInteger(stars) || stars > MAX_STARS) return null;
      const language = codeOf(languages, p.languageLc, LANGUAGE_NULL);
      const category = codeOf(categories, p.category, CATEGORY_NULL);
      if (language < 0 || category < 0) return null;
      words[2 * row] = stars;
      words[2 * row + 1] = ((category << 24) | language) >>> 0;
    }
    return new PackedRankColumns(words, languages, categories);
  }

  stars(row: number): number {
    return this.words[2 * row]!;
  }

  language(row: number): number {
    const code = this.words[2 * row + 1]! & LANGUAGE_NULL;
    return code === LANGUAGE_NULL ? -1 : code;
  }

  languageCode(languageLc: string): number {
    return this.languageCodes.get(languageLc) ?? -2;
  }

  category(row: number): number {
    const code = this.words[2 * row + 1]! >>> 24;
    return code === CATEGORY_NULL ? -1 : code;
  }

  categoryCode(category: string): number {
    return this.categoryCodes.get(category) ?? -2;
  }
}

/** The value's code (assigned in order of first appearance), `nullCode` for null, -1 when the codes are used up. */
function codeOf(codes: Map<string, number>, value: string | null | undefined, nullCode: number): number {
  if (value === null || value === undefined) return nullCode;
  let code = codes.get(value);
  if (code === undefined) {
    if (codes.size >= nullCode) return -1;
    code = codes.size;
    codes.set(value, code);
  }
  return code;
}
