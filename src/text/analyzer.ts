/**
 * Text analysis shared by lexical indexing and querying (and reusable by snippets and embedders):
 * Unicode-aware tokenisation, identifier splitting, CJK bigrams, stop words and light stemming.
 *
 * `analyze` must stay deterministic: the lexical index stores analysed terms, so changing what it
 * emits for a given text requires rebuilding every index (bump the lexical format version).
 */

/** Longer tokens are almost always noise (hashes, base64, minified code) and are dropped. */
const MAX_TOKEN_LENGTH = 40;

/**
 * A small English stop-word list (Lucene's classic set plus pronouns and auxiliaries that carry
 * no topic). Kept short on purpose: words such as "no", "not", "it" or "go" can be meaningful in
 * repository search, and BM25's IDF already discounts frequent words.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its " +
    "me my of on or our s so such t than that the their them then there these they this those to us " +
    "was we were what when where which who why will with would you your"
  ).split(" "),
);

export type Stemmer = "none" | "s" | "porter";

export interface AnalyzerOptions {
  /** "porter" (default): Porter (1980); "s": plural-only S-stemmer; "none": no stemming. */
  readonly stemmer?: Stemmer;
  readonly stopWords?: ReadonlySet<string>;
}

export type Analyze = (text: string) => string[];

/** Builds an analyzer; `analyze` below is the default one used by the lexical index. */
export function createAnalyzer(options: AnalyzerOptions = {}): Analyze {
  const stemmer = options.stemmer ?? "porter";
  if (stemmer !== "none" && stemmer !== "s" && stemmer !== "porter") {
    throw new Error(`analyzer: unknown stemmer "${String(stemmer)}" (expected "none", "s" or "porter")`);
  }
  const stop = options.stopWords ?? STOP_WORDS;
  if (!(stop instanceof Set)) throw new TypeError("analyzer: stopWords must be a Set of lowercase words");
  const stem = stemmer === "s" ? sStem : stemmer === "porter" ? porterWithOverrides : (w: string) => w;
  const tokenizer = new Tokenizer(stop, stem);
  return (text: string): string[] => tokenizer.run(text);
}

/**
 * The default analyzer: small stop list and Porter stemming. On the dev queries Porter beat the
 * S-stemmer (nDCG@10 0.156 vs 0.149) and no stemming (0.100); a 170-word stop list changed nothing.
 */
export function analyze(text: string): string[] {
  return (defaultAnalyzer ??= createAnalyzer())(text);
}
let defaultAnalyzer: Analyze | undefined; // created on first use: module-level tables load after this point

// ---------------------------------------------------------------------------------------------
// Tokenisation
//
// A hand-written scanner rather than regexes: it runs over every field of every repository at
// build time. Characters are separators, word characters (letters, digits, marks), connectors
// (' ’ _ . -, which join two word characters into one identifier chunk) or CJK.

const SEP = 0;
const WORD = 1;
const CONN = 2;
const CJK = 3;

const NON_ASCII = /[^\x00-\x7f]/;
const WORD_CHAR = /^[\p{L}\p{N}\p{M}]$/u;
const CJK_CHAR = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]$/u;

const ASCII_KIND = new Uint8Array(128);
for (let c = 48; c <= 57; c++) ASCII_KIND[c] = WORD;
for (let c = 65; c <= 90; c++) ASCII_KIND[c] = WORD;
for (let c = 97; c <= 122; c++) ASCII_KIND[c] = WORD;
for (const c of "'_.-") ASCII_KIND[c.charCodeAt(0)] = CONN;
/** Lazily filled kind + 1 for BMP characters (0 = not classified yet). */
const BMP_KIND = new Uint8Array(0x10000);

function classify(cp: number): number {
  if (cp === 0x2019) return CONN; // ’ as an apostrophe
  const ch = String.fromCodePoint(cp);
  if (CJK_CHAR.test(ch)) return CJK;
  return WORD_CHAR.test(ch) ? WORD : SEP;
}

function kindOf(cp: number): number {
  if (cp < 128) return ASCII_KIND[cp]!;
  if (cp < 0x10000) {
    let k = BMP_KIND[cp]!;
    if (k === 0) BMP_KIND[cp] = k = classify(cp) + 1;
    return k - 1;
  }
  return classify(cp);
}

// Chunk flags gathered while scanning, to pick a fast path.
const F_FIRST_UPPER = 1;
const F_INNER_UPPER = 2;
const F_DIGIT = 4;
const F_CONN = 8;
const F_NON_ASCII = 16;

class Tokenizer {
  private out: string[] = [];

  constructor(
    private readonly stop: ReadonlySet<string>,
    private readonly stem: (w: string) => string,
  ) {}

  run(text: string): string[] {
    const out: string[] = (this.out = []);
    if (typeof text !== "string" || text.length === 0) return out;
    // NFKC folds full-width Latin (common in Chinese text) and ligatures; ASCII needs none.
    const src = NON_ASCII.test(text) ? text.normalize("NFKC") : text;
    const n = src.length;
    let i = 0;
    while (i < n) {
      let cp = src.charCodeAt(i);
      let width = 1;
      if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < n) {
        cp = src.codePointAt(i)!;
        width = cp > 0xffff ? 2 : 1;
      }
      const kind = kindOf(cp);
      if (kind === WORD) {
        const start = i;
        let flags = 0;
        for (;;) {
          // A run of word characters...
          while (i < n) {
            let c = src.charCodeAt(i);
            let w = 1;
            if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
              c = src.codePointAt(i)!;
              w = c > 0xffff ? 2 : 1;
            }
            if (c < 128) {
              if (ASCII_KIND[c] !== WORD) break;
              if (c <= 57) flags |= F_DIGIT;
              else if (c <= 90) flags |= i === start ? F_FIRST_UPPER : F_INNER_UPPER;
            } else {
              if (kindOf(c) !== WORD) break;
              flags |= F_NON_ASCII;
            }
            i += w;
          }
          // ...continued across a single connector followed by another word character.
          if (i + 1 < n && isConnector(src.charCodeAt(i)) && kindOf(src.codePointAt(i + 1)!) === WORD) {
            flags |= F_CONN;
            i++;
            continue;
          }
          break;
        }
        const chunk = src.slice(start, i);
        if (flags === 0) this.emit(chunk, true);
        else if (flags === F_FIRST_UPPER) this.emit(chunk.toLowerCase(), true);
        else this.compound(chunk);
      } else if (kind === CJK) {
        const start = i;
        i += width;
        while (i < n) {
          const c = src.codePointAt(i)!;
          if (kindOf(c) !== CJK) break;
          i += c > 0xffff ? 2 : 1;
        }
        this.cjkBigrams(src.slice(start, i));
      } else {
        i += width;
      }
    }
    return out;
  }

  private emit(lower: string, applyStem: boolean): void {
    if (lower.length === 0 || lower.length > MAX_TOKEN_LENGTH || this.stop.has(lower)) return;
    this.out.push(applyStem ? this.stem(lower) : lower);
  }

  /** Overlapping character bigrams ("机器学习" → 机器 器学 学习); a lone character stays a unigram. */
  private cjkBigrams(run: string): void {
    const chars = Array.from(run); // code points, not UTF-16 units
    if (chars.length === 1) {
      this.emit(chars[0]!, false);
      return;
    }
    for (let i = 0; i + 1 < chars.length; i++) this.emit(chars[i]! + chars[i + 1]!, false);
  }

  /**
   * An identifier-like chunk: emits every word part plus the joined forms, so "FastAPI", "fast-api"
   * and "fastapi" all produce the term "fastapi" while "fast" and "api" still match on their own.
   * Levels: connector-separated segments → letter/digit runs → camelCase words.
   */
  private compound(chunk: string): void {
    const all: string[] = [];
    let segments = 0;
    let segStart = 0;
    for (let i = 0; i <= chunk.length; i++) {
      if (i < chunk.length && !isConnector(chunk.charCodeAt(i))) continue;
      if (i > segStart) {
        segments++;
        this.segment(chunk.slice(segStart, i), all);
      }
      segStart = i + 1;
    }
    if (segments > 1 && all.length > 1 && !all.every(isDigits)) this.emit(all.join(""), true);
  }

  /** One connector-free segment: letter/digit runs, camelCase words; appends its parts to `all`. */
  private segment(seg: string, all: string[]): void {
    const first = all.length;
    let runs = 0;
    let start = 0;
    for (let i = 1; i <= seg.length; i++) {
      if (i < seg.length && isDigitAt(seg, i) === isDigitAt(seg, i - 1)) continue;
      const run = seg.slice(start, i);
      runs++;
      if (isDigitAt(run, 0)) {
        all.push(run);
        this.emit(run, false);
      } else {
        const words = camelWords(run);
        for (const w of words) this.emit(w, true);
        if (words.length > 1) this.emit(words.join(""), true);
        for (const w of words) all.push(w);
      }
      start = i;
    }
    if (runs > 1) this.emit(all.slice(first).join(""), true);
  }
}

function isConnector(c: number): boolean {
  return c === 39 || c === 95 || c === 46 || c === 45 || c === 0x2019; // ' _ . - ’
}

function isDigitAt(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57;
}

function isDigits(s: string): boolean {
  return isDigitAt(s, 0);
}

function isPlainLowerWord(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 97 || c > 122) return false;
  }
  return true;
}

const UPPER = 1;
const LOWER = 2; // also letters without case, marks and non-ASCII digits

function caseAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c >= 65 && c <= 90) return UPPER;
  if (c < 128) return LOWER;
  const ch = s[i]!;
  return ch !== ch.toLowerCase() ? UPPER : LOWER;
}

/**
 * Lowercased camelCase words of a letter run: "XMLHttpRequest" → xml, http, request;
 * "FastAPI" → fast, api; a plural acronym stays whole ("APIs" → apis, not "AP" + "Is").
 */
function camelWords(run: string): string[] {
  const words: string[] = [];
  let start = 0;
  let prev = caseAt(run, 0);
  for (let i = 1; i < run.length; i++) {
    const cur = caseAt(run, i);
    if (prev === LOWER && cur === UPPER) {
      words.push(run.slice(start, i).toLowerCase());
      start = i;
    } else if (prev === UPPER && cur === LOWER && i - start > 1) {
      const pluralAcronym = run.charCodeAt(i) === 115 && (i + 1 === run.length || caseAt(run, i + 1) !== LOWER);
      if (!pluralAcronym) {
        words.push(run.slice(start, i - 1).toLowerCase());
        start = i - 1;
      }
    }
    prev = cur;
  }
  words.push(run.slice(start).toLowerCase());
  return words;
}

// ---------------------------------------------------------------------------------------------
// Stemming (input is lowercase)

/**
 * Words Porter conflates with a word of another meaning in software text, kept apart: "engineering" is
 * not an "engine", "containers" do not "contain", "windows" the system is not a "window", "relational" is
 * not "related", "news" is not "new", an "IDE" is not an "id". Chosen by grouping the dataset's
 * description and topic words (≥ 30 uses each) by their Porter stem and reading the 400 largest groups
 * for forms of another meaning; the forms of one meaning stay together ("generator", "generate",
 * "generation"; "container", "containerized"). Held out, same folds and static model, two seeds of the
 * trees: dev nDCG@10 / MRR 0.254 / 0.457 → 0.255 / 0.464 and 0.255 / 0.460 → 0.253 / 0.456, head hit@3
 * 0.816 → 0.827 and 0.822 → 0.822 (docs/performance.md, 2026-12-06).
 */
const STEM_OVERRIDES: ReadonlyMap<string, string> = new Map(
  Object.entries({
    general: "general",
    generic: "generic",
    generics: "generic",
    engineer: "engineer",
    engineers: "engineer",
    engineering: "engineer",
    engineered: "engineer",
    windows: "windows",
    container: "container",
    containers: "container",
    containerized: "container",
    containerised: "container",
    containerize: "container",
    containerization: "container",
    integrity: "integrity",
    anime: "anime",
    animal: "animal",
    animals: "animal",
    news: "news",
    community: "community",
    communities: "community",
    customer: "customer",
    customers: "customer",
    objective: "objective",
    objectives: "objective",
    productivity: "productivity",
    localization: "localiz",
    localisation: "localiz",
    localizations: "localiz",
    distribution: "distribution",
    distributions: "distribution",
    transformer: "transformer",
    transformers: "transformer",
    relational: "relational",
    relation: "relation",
    relations: "relation",
    specific: "specific",
    specifically: "specific",
    expression: "expression",
    expressions: "expression",
    expressive: "expressive",
    ide: "ide",
    ides: "ide",
    operator: "operator",
    operators: "operator",
    operating: "operating",
    electronic: "electronic",
    electronics: "electronic",
    composer: "composer",
    important: "important",
    progressive: "progressive",
    responsive: "responsive",
    university: "university",
    universities: "university",
    universe: "universe",
    organic: "organic",
    identity: "identity",
    identities: "identity",
    authorization: "authoriz",
    authorisation: "authoriz",
    authorize: "authoriz",
    authorized: "authoriz",
    authorizing: "authoriz",
    police: "police",
  }),
);

function porterWithOverrides(word: string): string {
  return STEM_OVERRIDES.get(word) ?? porterStem(word);
}

/**
 * Harman's S-stemmer as in Lucene's EnglishMinimalStemmer, skipping words shorter than four letters
 * so that "js", "os", "ios" and "aws" are not conflated with other terms ("ios" → "io").
 */
export function sStem(w: string): string {
  const n = w.length;
  if (n < 4 || w.charCodeAt(n - 1) !== 115 /* s */) return w;
  const p = w[n - 2]!;
  if (p === "u" || p === "s") return w;
  if (p === "e") {
    const q = w[n - 3]!;
    if (q === "i" && n > 4 && w[n - 4] !== "a" && w[n - 4] !== "e") return w.slice(0, n - 3) + "y";
    if (q === "i" || q === "a" || q === "o" || q === "e") return w;
  }
  return w.slice(0, n - 1);
}

/**
 * The Porter (1980) stemmer for lowercase ASCII words (other words are returned unchanged), after
 * Martin Porter's reference C implementation, including its two departures ("bli" → "ble",
 * "logi" → "log"). It works in place on a shared char-code buffer: it runs for every token at
 * build time, so it avoids per-call closures and intermediate strings.
 */
export function porterStem(word: string): string {
  const n = word.length;
  if (n < 3 || n > pb.length || !isPlainLowerWord(word)) return word;
  for (let i = 0; i < n; i++) pb[i] = word.charCodeAt(i);
  pk = n - 1;
  step1ab();
  if (pk > 0) {
    step1c();
    step2();
    step3();
    step4();
    step5();
  }
  const len = pk + 1;
  for (let i = 0; i < len; i++) {
    if (pb[i] !== word.charCodeAt(i)) return String.fromCharCode.apply(null, pb.subarray(0, len) as unknown as number[]);
  }
  return len === n ? word : word.slice(0, len);
}

// Porter state: the word in pb[0..pk]; pj marks the stem end set by a successful ends().
const pb = new Uint8Array(MAX_TOKEN_LENGTH);
let pk = 0;
let pj = 0;

const CH_E = 101,
  CH_I = 105,
  CH_L = 108,
  CH_S = 115,
  CH_T = 116,
  CH_Y = 121,
  CH_Z = 122;

function cons(i: number): boolean {
  switch (pb[i]) {
    case 97:
    case 101:
    case 105:
    case 111:
    case 117: // a e i o u
      return false;
    case CH_Y:
      return i === 0 ? true : !cons(i - 1);
    default:
      return true;
  }
}

/** The number of VC sequences in pb[0..pj]. */
function measure(): number {
  let m = 0;
  let i = 0;
  while (i <= pj && cons(i)) i++;
  for (;;) {
    while (i <= pj && !cons(i)) i++;
    if (i > pj) return m;
    while (i <= pj && cons(i)) i++;
    m++;
  }
}

function vowelInStem(): boolean {
  for (let i = 0; i <= pj; i++) if (!cons(i)) return true;
  return false;
}

function doubleCons(j: number): boolean {
  return j >= 1 && pb[j] === pb[j - 1] && cons(j);
}

/** pb[i-2..i] is consonant-vowel-consonant and pb[i] is not w, x or y. */
function cvc(i: number): boolean {
  if (i < 2 || !cons(i) || cons(i - 1) || !cons(i - 2)) return false;
  const ch = pb[i];
  return ch !== 119 && ch !== 120 && ch !== CH_Y;
}

function ends(suffix: string): boolean {
  const len = suffix.length;
  if (len > pk + 1) return false;
  const at = pk - len + 1;
  for (let t = 0; t < len; t++) if (pb[at + t] !== suffix.charCodeAt(t)) return false;
  pj = pk - len;
  return true;
}

function setTo(suffix: string): void {
  for (let t = 0; t < suffix.length; t++) pb[pj + 1 + t] = suffix.charCodeAt(t);
  pk = pj + suffix.length;
}

/** Replaces the suffix matched by the last ends() when the stem's measure is > 0. */
function r(replacement: string): void {
  if (measure() > 0) setTo(replacement);
}

function step1ab(): void {
  if (pb[pk] === CH_S) {
    if (ends("sses")) pk -= 2;
    else if (ends("ies")) setTo("i");
    else if (pb[pk - 1] !== CH_S) pk--;
  }
  if (ends("eed")) {
    if (measure() > 0) pk--;
  } else if ((ends("ed") || ends("ing")) && vowelInStem()) {
    pk = pj;
    if (ends("at")) setTo("ate");
    else if (ends("bl")) setTo("ble");
    else if (ends("iz")) setTo("ize");
    else if (doubleCons(pk)) {
      const ch = pb[pk];
      if (ch !== CH_L && ch !== CH_S && ch !== CH_Z) pk--;
    } else {
      pj = pk;
      if (measure() === 1 && cvc(pk)) setTo("e");
    }
  }
}

function step1c(): void {
  if (ends("y") && vowelInStem()) pb[pk] = CH_I;
}

// Steps 2–4 dispatch on a letter of the suffix, as in the reference implementation: the first
// matching suffix decides even when its measure condition then fails.
function step2(): void {
  if (pk < 1) return;
  switch (pb[pk - 1]) {
    case 97: // a
      if (ends("ational")) r("ate");
      else if (ends("tional")) r("tion");
      return;
    case 99: // c
      if (ends("enci")) r("ence");
      else if (ends("anci")) r("ance");
      return;
    case 101: // e
      if (ends("izer")) r("ize");
      return;
    case 108: // l
      if (ends("bli")) r("ble");
      else if (ends("alli")) r("al");
      else if (ends("entli")) r("ent");
      else if (ends("eli")) r("e");
      else if (ends("ousli")) r("ous");
      return;
    case 111: // o
      if (ends("ization")) r("ize");
      else if (ends("ation")) r("ate");
      else if (ends("ator")) r("ate");
      return;
    case 115: // s
      if (ends("alism")) r("al");
      else if (ends("iveness")) r("ive");
      else if (ends("fulness")) r("ful");
      else if (ends("ousness")) r("ous");
      return;
    case 116: // t
      if (ends("aliti")) r("al");
      else if (ends("iviti")) r("ive");
      else if (ends("biliti")) r("ble");
      return;
    case 103: // g
      if (ends("logi")) r("log");
      return;
  }
}

function step3(): void {
  switch (pb[pk]) {
    case 101: // e
      if (ends("icate")) r("ic");
      else if (ends("ative")) r("");
      else if (ends("alize")) r("al");
      return;
    case 105: // i
      if (ends("iciti")) r("ic");
      return;
    case 108: // l
      if (ends("ical")) r("ic");
      else if (ends("ful")) r("");
      return;
    case 115: // s
      if (ends("ness")) r("");
      return;
  }
}

function step4(): void {
  if (pk < 1) return;
  let hit = false;
  switch (pb[pk - 1]) {
    case 97:
      hit = ends("al");
      break;
    case 99:
      hit = ends("ance") || ends("ence");
      break;
    case 101:
      hit = ends("er");
      break;
    case 105:
      hit = ends("ic");
      break;
    case 108:
      hit = ends("able") || ends("ible");
      break;
    case 110:
      hit = ends("ant") || ends("ement") || ends("ment") || ends("ent");
      break;
    case 111:
      hit = (ends("ion") && pj >= 0 && (pb[pj] === CH_S || pb[pj] === CH_T)) || ends("ou");
      break;
    case 115:
      hit = ends("ism");
      break;
    case 116:
      hit = ends("ate") || ends("iti");
      break;
    case 117:
      hit = ends("ous");
      break;
    case 118:
      hit = ends("ive");
      break;
    case 122:
      hit = ends("ize");
      break;
  }
  if (hit && measure() > 1) pk = pj;
}

function step5(): void {
  pj = pk;
  if (pb[pk] === CH_E) {
    const m = measure();
    if (m > 1 || (m === 1 && !cvc(pk - 1))) pk--;
  }
  if (pb[pk] === CH_L && doubleCons(pk) && measure() > 1) pk--;
}

// ---------------------------------------------------------------------------------------------
// README cleaning

const ENTITIES: Readonly<Record<string, string>> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  ndash: "–",
  mdash: "—",
  hellip: "…",
  copy: "©",
  reg: "®",
  trade: "™",
  laquo: "«",
  raquo: "»",
  middot: "·",
  bull: "•",
};

/**
 * Turns raw, untrusted README markdown/HTML into plain prose for indexing and snippets: drops code
 * fences, HTML comments, script/style blocks, images and badges, link targets, bare URLs, HTML tags,
 * reference definitions and emoji shortcodes; keeps link and heading text; decodes entities;
 * collapses whitespace. The output is plain text (entities decoded): escape it before rendering as
 * HTML. Every pattern is linear-time, so hostile input cannot cause catastrophic backtracking.
 */
export function stripMarkup(text: string): string {
  if (typeof text !== "string" || text.length === 0) return "";
  if (!MARKUP_HINT.test(text)) return collapse(text);
  let s = text.replace(/\r\n?/g, "\n");
  // Fenced code (an unterminated fence runs to the end: READMEs are cut at 1500 characters).
  s = s.replace(/^[ \t]*(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^[ \t]*\1[ \t]*$|(?![\s\S]))/gm, " ");
  s = s.replace(/<!--[\s\S]*?(?:-->|$)/g, " ");
  s = s.replace(/<(script|style)\b[^>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi, " ");
  // Images (badges are images inside links, so the link left behind has empty text).
  s = s.replace(/!\[[^[\]\n]*\]\([^()\n]*\)/g, " ");
  s = s.replace(/!\[[^[\]\n]*\]\[[^[\]\n]*\]/g, " ");
  // Links keep their text: [text](url) and [text][ref].
  s = s.replace(/\[([^[\]\n]*)\]\([^()\n]*\)/g, "$1");
  s = s.replace(/\[([^[\]\n]*)\]\[[^[\]\n]*\]/g, "$1");
  // Reference definitions: [id]: url "title".
  s = s.replace(/^[ \t]*\[[^[\]\n]+\]:[ \t]*\S+.*$/gm, " ");
  // HTML tags (and autolinks such as <https://…>); a tag cut off at the end is dropped too.
  s = s.replace(/<\/?[a-zA-Z!][^<>]*(?:>|$)/g, " ");
  // Bare URLs, leaving the sentence punctuation that follows them.
  s = s.replace(/\b(?:https?|ftp):\/\/[^\s<>()[\]]*[^\s<>()[\].,;:!?'"]/gi, " ");
  s = s.replace(/\bwww\.[^\s<>()[\]]*[^\s<>()[\].,;:!?'"]/gi, " ");
  s = s.replace(/:[a-z0-9_+-]{2,30}:/g, " ");
  // Markdown punctuation that only adds noise to snippets: headings, emphasis, quotes, tables, rules.
  s = s.replace(/^[ \t]*(?:#{1,6}|>+|[-*+]|\d+\.)[ \t]+/gm, "");
  s = s.replace(/^[ \t]*[-=*_|: \t]{3,}$/gm, " ");
  s = s.replace(/\*\*|__|~~|`+|\|/g, " ");
  s = s.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]{2,8}));/g, (_all, dec, hex, name) => {
    if (name !== undefined) return ENTITIES[name.toLowerCase()] ?? " ";
    const cp = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex, 16);
    return cp > 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? String.fromCodePoint(cp) : " ";
  });
  return collapse(s);
}

/**
 * Matches every text that any rule above could change (it may over-match, never under-match), so
 * plain descriptions skip the dozen passes: most repository descriptions contain no markup.
 */
const MARKUP_HINT = /[<>[&`*#|~_]|:\/\/|www\.|:[a-z0-9_+-]{2,30}:|^[ \t]*(?:[-+=:]|\d+\.)/im;

/** Control and zero-width characters become spaces, then whitespace runs collapse. */
function collapse(s: string): string {
  return collapseWhitespace(s.replace(/[\u0000-\u0008\u000b-\u001f\u007f\u200b-\u200f\u2060\ufeff]/g, " ")).trim();
}

/**
 * The whitespace runs that `s.replace(/\s+/g, " ")` would change: two or more characters, or one that
 * is not a plain space. Same result, but text with single spaces only is returned as it is instead of
 * being rebuilt (this runs on every snippet of every search).
 */
const WHITESPACE_TO_COLLAPSE = /\s{2,}|[^\S ]/g;

/** Every whitespace run as one space (the same as `s.replace(/\s+/g, " ")`). */
export function collapseWhitespace(s: string): string {
  return s.replace(WHITESPACE_TO_COLLAPSE, " ");
}
