/**
 * What the corpus says each project is, the way web search uses anchor text.
 *
 * Repositories name other projects in their own words and topics: "a Kubernetes operator for Postgres",
 * "Next.js starter with Tailwind", topic `calibre`. Gathered over the whole corpus, the words around
 * those mentions say what the named project is (a container orchestrator, a React framework, an ebook
 * manager) in the vocabulary searchers use, which its own one-line description often lacks.
 *
 * 1. Names. A project name is the word form of a repository part ("next.js" → `nextjs`) held by one
 *    dominant repository: ≥ 500 stars and ≥ 3× the stars of the next repository with that form, or
 *    ≥ 1.5× when its owner is named after it (tmux/tmux over gpakosz/.tmux, redis/redis over an old
 *    redis-io/redis copy, nodejs/node over base/node: an organisation named after a project is the
 *    name's home). Programming languages are not projects ("Python" names the language, not
 *    TheAlgorithms/Python).
 * 2. Proper nouns or coined words. A form is used as a name when the corpus writes it capitalised
 *    where it is not the first word of a description ("for React", "a Kubernetes operator") at least
 *    half the time, or when it is mostly written as words that are not common English
 *    (../text/english.ts). The first drops common words that happen to be repository names:
 *    "library" is capitalised 11% of the time, "terminal" 11%, "container" 17%; "Kubernetes" 92%,
 *    "Laravel" 94%. The second keeps the tools whose names are written in lowercase: "pytest" is
 *    capitalised 15% of the time, "git" 36%, "fzf" 5%, "ffmpeg" 49%.
 * 3. Mentions. A repository mentions a project when its description holds the form (one to three
 *    words, joined by nothing, a space, "." or "-"; the longest form wins, so "Next.js" is `nextjs`,
 *    never `next`) or one of its topics is the form. Not when a proper noun stands right before it
 *    that the project's own words never say: "Jetpack Compose" is Android's UI toolkit, not
 *    docker/compose ("Define and run multi-container applications with Docker"), "Docker Swarm" is
 *    not openai/swarm; "Docker Compose", "HashiCorp Nomad" and "Laravel Livewire" stay mentions of
 *    docker/compose, hashicorp/nomad and livewire/livewire ("A full-stack framework for Laravel …").
 *    A proper noun is a word the corpus capitalises mid-sentence in at least half of its (≥ 5) uses.
 * 4. Fame in proportion. A name the corpus uses far more often than its holder's fame would explain
 *    names something else: a platform, a format, a word ("macOS" → dockur/macos, 21k stars and 2,201
 *    mentions; "JSON" → nlohmann/json, 50k and 1,882; "HTTP" → httprb/http, 3k and 2,076). A project
 *    keeps its mentions only with ≥ STARS_PER_MENTION stars per mention (kubernetes/kubernetes 111,
 *    react/react 56, kovidgoyal/calibre 2,500).
 * 5. Anchor terms. Over the repositories that mention a project (at least two), each word counts once
 *    per repository; words are ranked by count × idf and the best ANCHOR_TERMS are kept, those of at
 *    least two mentioning repositories. The project's anchor text is those words in term order, each
 *    written anchorRepeats(count) times: as in web search, a word many linking pages use says more
 *    than one a few use, and BM25 reads that from the term frequency (its saturation bounds it).
 *
 * How much the anchor field and the mention count weigh in ranking is learned (src/core/rank).
 * Deterministic: the result depends only on the set of records.
 */
import type { RepoRecord } from "../dataset/record.js";
import { analyze, STOP_WORDS } from "../text/analyzer.js";
import { isEnglishWord } from "../text/english.js";

/** Bumped whenever the recipe changes: the evidence is part of every point's content hash. */
export const ANCHORS_VERSION = 4;

export const ANCHOR_TERMS = 24;
const MIN_TARGET_STARS = 500;
const DOMINANCE = 3;
const OWN_ORG_DOMINANCE = 1.5;
const MIN_FORM_LENGTH = 3;
const MIN_PROPER_RATIO = 0.5;
const MIN_ENGLISH_RATIO = 0.5;
const MAX_NGRAM = 3;
const MIN_MENTIONS = 2;
const STARS_PER_MENTION = 30;
/** Mid-sentence uses a word needs before its capitalisation says it is a proper noun (step 3). */
const MIN_PROPER_USES = 5;

/** Languages named in repository text refer to the language, not to a repository named after it. */
const LANGUAGE_FORMS: ReadonlySet<string> = new Set(
  (
    "python javascript typescript java golang rust ruby php kotlin swift scala elixir haskell lua perl julia dart " +
    "clojure ocaml zig nim cpp csharp html css sql shell bash powershell erlang fortran cobol matlab solidity"
  ).split(" "),
);

export interface ProjectEvidence {
  /** The words the corpus uses around mentions of the project, in term order; null with < 2 mentions. */
  readonly anchor: string | null;
  /** Repositories that mention the project. */
  readonly mentions: number;
}

export interface AnchorStats {
  /** Forms accepted as project names. */
  readonly names: number;
  /** Projects with an anchor text. */
  readonly projects: number;
}

/** The word form of a name: lowercase letters and digits only ("Next.js" → "nextjs"). */
export function nameForm(s: string): string {
  return (s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join("");
}

const WORD_RE = /[\p{L}\p{N}]+/gu;

interface Word {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

function words(s: string): Word[] {
  const out: Word[] = [];
  for (const m of s.matchAll(WORD_RE)) out.push({ text: m[0], start: m.index, end: m.index + m[0].length });
  return out;
}

/** Calls `fn(form, i, n)` for each 1..MAX_NGRAM-word run joined by nothing, " ", "." or "-". */
function eachNgram(text: string, ws: readonly Word[], fn: (form: string, i: number, n: number) => void): void {
  for (let i = 0; i < ws.length; i++) {
    let form = "";
    for (let n = 1; n <= MAX_NGRAM && i + n <= ws.length; n++) {
      const w = ws[i + n - 1]!;
      if (n > 1) {
        const gap = text.slice(ws[i + n - 2]!.end, w.start);
        if (gap !== "" && gap !== " " && gap !== "." && gap !== "-") break;
      }
      form += w.text.toLowerCase();
      fn(form, i, n);
    }
  }
}

/** Calls `fn(form, i, n)` for the longest name form starting at each word, left to right, without overlaps. */
function eachLongestName(text: string, ws: readonly Word[], isForm: (form: string) => boolean, fn: (form: string, i: number, n: number) => void): void {
  let skipTo = 0;
  let best: { form: string; i: number; n: number } | null = null;
  const flush = () => {
    if (best) fn(best.form, best.i, best.n);
    best = null;
  };
  eachNgram(text, ws, (form, i, n) => {
    if (i < skipTo) return;
    if (best && i !== best.i) {
      skipTo = best.i + best.n;
      const b = best;
      flush();
      if (i < b.i + b.n) return;
    }
    if (isForm(form)) best = { form, i, n };
  });
  flush();
}

/** Dominant holder of each name form (step 1). */
function projectNames(records: readonly RepoRecord[]): Map<string, RepoRecord> {
  const best = new Map<string, { top: RepoRecord; topStars: number; second: number }>();
  for (const r of records) {
    const stars = r.stars ?? 0;
    const forms = new Set([r.key, ...r.aliases.map((a) => a.toLowerCase())].map((k) => nameForm(k.slice(k.indexOf("/") + 1))));
    for (const f of forms) {
      if (f.length < MIN_FORM_LENGTH || LANGUAGE_FORMS.has(f)) continue;
      const b = best.get(f);
      if (!b) best.set(f, { top: r, topStars: stars, second: 0 });
      else if (stars > b.topStars || (stars === b.topStars && r.key < b.top.key)) best.set(f, { top: r, topStars: stars, second: b.topStars });
      else b.second = Math.max(b.second, stars);
    }
  }
  const names = new Map<string, RepoRecord>();
  for (const [f, b] of best) {
    const dominance = ownerNamedAfter(b.top.key, f) ? OWN_ORG_DOMINANCE : DOMINANCE;
    if (b.topStars >= MIN_TARGET_STARS && b.topStars >= dominance * b.second) names.set(f, b.top);
  }
  return names;
}

/** Whether the owner of `key` (owner/repo) is named after the form: tmux/tmux, nodejs/node, go-gorm/gorm. */
function ownerNamedAfter(key: string, form: string): boolean {
  return nameForm(key.slice(0, key.indexOf("/"))).includes(form);
}

/** Evidence for every project the corpus mentions (see the module comment), by canonical key. */
export function projectEvidence(records: readonly RepoRecord[]): { evidence: Map<string, ProjectEvidence>; stats: AnchorStats } {
  const names = projectNames(records);
  // Step 2: how often each form is capitalised, or written as common English words, where it is not
  // a description's first word.
  const capital = new Map<string, number>();
  const english = new Map<string, number>();
  const inner = new Map<string, number>();
  // Every word's mid-sentence uses and how many of them are capitalised (step 3's proper nouns).
  const wordUses = new Map<string, { uses: number; capitalised: number }>();
  const parsed = records.map((r) => {
    const text = r.description ?? "";
    const ws = words(text);
    for (let k = 1; k < ws.length; k++) {
      const w = ws[k]!.text;
      const lower = w.toLowerCase();
      let u = wordUses.get(lower);
      if (!u) wordUses.set(lower, (u = { uses: 0, capitalised: 0 }));
      u.uses++;
      if (/^\p{Lu}/u.test(w)) u.capitalised++;
    }
    eachLongestName(
      text,
      ws,
      (f) => names.has(f),
      (form, i, n) => {
        if (i === 0) return;
        inner.set(form, (inner.get(form) ?? 0) + 1);
        if (ws.slice(i, i + n).every((w) => isEnglishWord(w.text))) english.set(form, (english.get(form) ?? 0) + 1);
        for (let k = i; k < i + n; k++) {
          if (/\p{Lu}/u.test(ws[k]!.text)) {
            capital.set(form, (capital.get(form) ?? 0) + 1);
            break;
          }
        }
      },
    );
    return { text, ws };
  });
  const isName = (form: string): boolean => {
    if (!names.has(form)) return false;
    const seen = inner.get(form) ?? 0;
    // Forms the descriptions never use mid-sentence are judged by their topics alone.
    return seen === 0 || (capital.get(form) ?? 0) / seen >= MIN_PROPER_RATIO || (english.get(form) ?? 0) / seen < MIN_ENGLISH_RATIO;
  };

  // Step 3: a mention right after a proper noun the project's own words never say names another
  // product ("Jetpack Compose", "Docker Swarm").
  const isProperNoun = (w: string): boolean => {
    const u = wordUses.get(w.toLowerCase());
    return /^\p{Lu}/u.test(w) && u !== undefined && u.uses >= MIN_PROPER_USES && u.capitalised / u.uses >= MIN_PROPER_RATIO;
  };
  // The words a project says of itself: its description and topics.
  const ownWordsOf = new Map<string, ReadonlySet<string>>();
  const ownWords = (t: RepoRecord): ReadonlySet<string> => {
    let own = ownWordsOf.get(t.key);
    if (!own) ownWordsOf.set(t.key, (own = new Set([t.description ?? "", ...t.topics].flatMap((x) => x.toLowerCase().match(WORD_RE) ?? []))));
    return own;
  };
  const namesAnother = (text: string, ws: readonly Word[], i: number, form: string): boolean => {
    if (i === 0) return false;
    const before = ws[i - 1]!;
    if (text.slice(before.end, ws[i]!.start) !== " " || !isProperNoun(before.text)) return false;
    const word = before.text.toLowerCase();
    const t = names.get(form)!;
    // An owner named after the word, under any of the project's names ("HashiCorp Nomad", "Vue Router"
    // of vuejs/router), is the project's own.
    return !ownWords(t).has(word) && ![t.key, ...t.aliases].some((k) => ownerNamedAfter(k, word));
  };

  // Steps 3 and 4.
  const stemOf = new Map<string, string | null>();
  const stem = (w: string): string | null => {
    let s = stemOf.get(w);
    if (s === undefined) {
      const t = STOP_WORDS.has(w) || w.length < 2 || /^\p{N}+$/u.test(w) ? [] : analyze(w);
      s = t.length === 1 ? t[0]! : null;
      stemOf.set(w, s);
    }
    return s;
  };
  const df = new Map<string, number>();
  const perTarget = new Map<string, { mentions: number; terms: Map<string, number>; surface: Map<string, Map<string, number>> }>();
  records.forEach((r, idx) => {
    const { text, ws } = parsed[idx]!;
    const lowered = [...ws.map((w) => w.text.toLowerCase()), ...r.topics.flatMap((t) => t.match(WORD_RE) ?? [])];
    const stems = new Map<string, string>();
    for (const w of lowered) {
      const s = stem(w);
      if (s !== null && !stems.has(s)) stems.set(s, w);
    }
    for (const s of stems.keys()) df.set(s, (df.get(s) ?? 0) + 1);

    const targets = new Map<string, Set<string>>();
    const mention = (form: string) => {
      if (!isName(form)) return;
      const t = names.get(form)!;
      if (t.key === r.key) return;
      let forms = targets.get(t.key);
      if (!forms) targets.set(t.key, (forms = new Set()));
      forms.add(form);
    };
    eachLongestName(text, ws, isName, (form, i) => {
      if (!namesAnother(text, ws, i, form)) mention(form);
    });
    for (const topic of r.topics) mention(nameForm(topic));
    for (const [key, forms] of targets) {
      let agg = perTarget.get(key);
      if (!agg) perTarget.set(key, (agg = { mentions: 0, terms: new Map(), surface: new Map() }));
      agg.mentions++;
      for (const [s, w] of stems) {
        if (forms.has(nameForm(w))) continue; // the name itself says nothing new
        agg.terms.set(s, (agg.terms.get(s) ?? 0) + 1);
        let sf = agg.surface.get(s);
        if (!sf) agg.surface.set(s, (sf = new Map()));
        sf.set(w, (sf.get(w) ?? 0) + 1);
      }
    }
  });

  const n = records.length;
  const evidence = new Map<string, ProjectEvidence>();
  let projects = 0;
  const starsOf = new Map(records.map((r) => [r.key, r.stars ?? 0]));
  for (const [key, agg] of perTarget) {
    if (starsOf.get(key)! < STARS_PER_MENTION * agg.mentions) continue;
    if (agg.mentions < MIN_MENTIONS) {
      evidence.set(key, { anchor: null, mentions: agg.mentions });
      continue;
    }
    const ranked = [...agg.terms]
      .filter(([, c]) => c >= 2)
      .map(([s, c]) => [s, c * Math.log(n / (1 + (df.get(s) ?? 0)))] as const)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, ANCHOR_TERMS)
      // Written in term order, not score order: every new record moves every idf by log(n), which
      // reorders terms of different counts, and a reordered anchor is a changed point to re-embed.
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const terms = ranked.map(([s]) =>
      Array<string>(anchorRepeats(agg.terms.get(s)!))
        .fill(mostFrequent(agg.surface.get(s)!))
        .join(" "),
    );
    evidence.set(key, { anchor: terms.length ? terms.join(" ") : null, mentions: agg.mentions });
    if (terms.length) projects++;
  }
  return { evidence, stats: { names: [...names.keys()].filter(isName).length, projects } };
}

/**
 * How often an anchor term is written: 1 + ⌊log2(count / 2)⌋ for the count of mentioning repositories
 * that use it (2–3 → 1, 4–7 → 2, 8–15 → 3, …), a logarithmic term frequency.
 */
export function anchorRepeats(count: number): number {
  return 1 + Math.floor(Math.log2(Math.max(2, count) / 2));
}

function mostFrequent(m: ReadonlyMap<string, number>): string {
  let best = "";
  let bestN = -1;
  for (const [w, c] of m) if (c > bestN || (c === bestN && w < best)) [best, bestN] = [w, c];
  return best;
}
