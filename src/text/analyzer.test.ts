import { test } from "vitest";
import assert from "node:assert/strict";
import { analyze, collapseWhitespace, createAnalyzer, porterStem, sStem, stripMarkup, STOP_WORDS } from "./analyzer.js";

const plain = createAnalyzer({ stemmer: "none" });

test("lowercases, splits on non-alphanumerics and drops stop words", () => {
  assert.deepEqual(plain("The Quick, brown FOX; jumps!"), ["quick", "brown", "fox", "jumps"]);
  assert.deepEqual(plain("a/b\tc\nd"), ["b", "c", "d"]); // "a" is a stop word
  assert.ok(STOP_WORDS.has("the") && !STOP_WORDS.has("go") && !STOP_WORDS.has("not"));
});

test("empty, whitespace, punctuation and stop-word-only text give no tokens", () => {
  for (const t of ["", "   \n\t ", "!!! --- ...", "the and of to with", "\u200b\ufeff"]) assert.deepEqual(analyze(t), [], JSON.stringify(t));
});

test("identifiers split into parts and keep the joined form", () => {
  const forms = ["FastAPI", "fast-api", "fast_api", "fastapi"].map((t) => plain(t));
  for (const toks of forms) assert.ok(toks.includes("fastapi"), toks.join(" "));
  assert.deepEqual(plain("FastAPI"), ["fast", "api", "fastapi"]);
  assert.deepEqual(plain("snake_case_name"), ["snake", "case", "name", "snakecasename"]);
  assert.deepEqual(plain("XMLHttpRequest"), ["xml", "http", "request", "xmlhttprequest"]);
  assert.deepEqual(plain("node.js"), ["node", "js", "nodejs"]);
  // owner/repo: both names, each an identifier of its own (no "ownerrepo" term).
  assert.deepEqual(plain("facebook/react-native"), ["facebook", "react", "native", "reactnative"]);
  // Plural acronyms stay whole; letter/digit boundaries split.
  assert.deepEqual(plain("APIs"), ["apis"]);
  assert.deepEqual(plain("python3"), ["python", "3", "python3"]);
  assert.deepEqual(plain("OAuth2"), ["o", "auth", "oauth", "2", "oauth2"]);
  // Version-like numbers are not glued into one number.
  assert.deepEqual(plain("1.2.3"), ["1", "2", "3"]);
  // Connectors at the edges or doubled do not join.
  assert.deepEqual(plain("-foo- bar--baz _x_"), ["foo", "bar", "baz", "x"]);
});

test("CJK runs become character bigrams, mixed with Latin words", () => {
  assert.deepEqual(analyze("机器学习框架"), ["机器", "器学", "学习", "习框", "框架"]);
  assert.deepEqual(analyze("用Python实现"), ["用", "python", "实现"]);
  assert.deepEqual(analyze("サーバー"), ["サー", "ーバ", "バー"]);
  assert.deepEqual(analyze("한국어"), ["한국", "국어"]);
  // Full-width Latin (common in Chinese text) folds to ASCII via NFKC.
  assert.deepEqual(analyze("ＡＩ助手"), ["ai", "助手"]);
  // Characters outside the BMP are kept whole (a surrogate pair is one character).
  assert.deepEqual(analyze("𠮷野"), ["𠮷野"]);
});

test("other scripts and accents are tokenised as words", () => {
  assert.deepEqual(plain("Привет мир café"), ["привет", "мир", "café"]);
});

test("the default analyzer stems with Porter", () => {
  assert.deepEqual(analyze("building CLIs with subcommands"), ["build", "cli", "subcommand"]);
  assert.deepEqual(analyze("libraries"), analyze("library"));
});

test("the default analyzer keeps apart words Porter gives one stem but software text two meanings", () => {
  const pairs: [string, string][] = [
    ["container orchestration", "contains everything"],
    ["game engineering", "game engine"],
    ["Windows", "window"],
    ["relational", "related"],
    ["news", "new"],
    ["IDE", "IDs"],
    ["general", "generator"],
    ["operators", "operations"],
  ];
  for (const [a, b] of pairs) {
    const [x, y] = [analyze(a), analyze(b)];
    assert.ok(!x.some((t) => y.includes(t) && t !== "game"), `${a} ${JSON.stringify(x)} / ${b} ${JSON.stringify(y)}`);
  }
  // Forms of one meaning still share a term.
  assert.deepEqual(analyze("containers containerized container"), ["container", "container", "container"]);
  assert.deepEqual(analyze("engineers engineering"), ["engineer", "engineer"]);
  assert.equal(analyze("generators")[0], analyze("generate")[0]);
  // The override is the default analyzer's, not Porter's: porterStem itself still follows the paper.
  assert.equal(porterStem("containers"), "contain");
});

test("Porter stemmer reproduces the examples of Porter (1980)", () => {
  const cases: [string, string][] = [
    ["caresses", "caress"],
    ["ponies", "poni"],
    ["cats", "cat"],
    ["feed", "feed"],
    ["agreed", "agre"],
    ["plastered", "plaster"],
    ["motoring", "motor"],
    ["sing", "sing"],
    ["conflated", "conflat"],
    ["troubled", "troubl"],
    ["sized", "size"],
    ["hopping", "hop"],
    ["falling", "fall"],
    ["hissing", "hiss"],
    ["filing", "file"],
    ["happy", "happi"],
    ["sky", "sky"],
    ["relational", "relat"],
    ["conditional", "condit"],
    ["rational", "ration"],
    ["digitizer", "digit"],
    ["vietnamization", "vietnam"],
    ["operator", "oper"],
    ["decisiveness", "decis"],
    ["hopefulness", "hope"],
    ["sensibiliti", "sensibl"],
    ["triplicate", "triplic"],
    ["electrical", "electr"],
    ["goodness", "good"],
    ["allowance", "allow"],
    ["adjustable", "adjust"],
    ["replacement", "replac"],
    ["adoption", "adopt"],
    ["communism", "commun"],
    ["effective", "effect"],
    ["bowdlerize", "bowdler"],
    ["probate", "probat"],
    ["rate", "rate"],
    ["cease", "ceas"],
    ["controll", "control"],
    ["roll", "roll"],
    ["generalizations", "gener"],
    ["oscillators", "oscil"],
  ];
  for (const [word, stem] of cases) assert.equal(porterStem(word), stem, word);
  // Short, non-ASCII and mixed tokens are left alone.
  for (const w of ["js", "os", "café", "v8s"]) assert.equal(porterStem(w), w);
});

test("S-stemmer removes plurals only, and leaves short words alone", () => {
  assert.equal(sStem("libraries"), "library");
  assert.equal(sStem("packages"), "package");
  assert.equal(sStem("tools"), "tool");
  for (const w of ["class", "status", "goes", "ios", "aws", "building"]) assert.equal(sStem(w), w);
  assert.deepEqual(createAnalyzer({ stemmer: "s" })("HTTP clients"), ["http", "client"]);
});

test("createAnalyzer validates its options", () => {
  assert.throws(() => createAnalyzer({ stemmer: "snowball" as never }), /unknown stemmer "snowball"/);
  assert.throws(() => createAnalyzer({ stopWords: ["the"] as never }), /stopWords must be a Set/);
  assert.deepEqual(createAnalyzer({ stopWords: new Set() })("the cat"), ["the", "cat"]);
});

test("stripMarkup removes badges, images, URLs, tags, entities and code", () => {
  const readme = [
    "[![Build Status](https://travis-ci.org/x/y.svg?branch=main)](https://travis-ci.org/x/y) ![logo](logo.png)",
    '<p align="center"><img src="banner.png" width="400"></p>',
    "# Rocket &amp; Engine &#x4e2d; &lt;fast&gt;",
    "A **fast** library. See the [documentation](https://docs.example.com/guide) or https://example.com/raw.",
    "<!-- hidden comment -->",
    "```bash",
    "npm install secret-package",
    "```",
    '[ref]: https://example.com/ref "title"',
    "| col | col |",
    "|-----|-----|",
    "Made with :heart: by people",
  ].join("\n");
  assert.equal(stripMarkup(readme), "Rocket & Engine 中 <fast> A fast library. See the documentation or . col col Made with by people");
  const toks = analyze(stripMarkup(readme));
  for (const noise of ["travi", "svg", "shield", "http", "png", "img", "src", "width", "secret", "npm", "heart", "titl", "amp"]) {
    assert.ok(!toks.includes(noise), `${noise} leaked: ${toks.join(" ")}`);
  }
});

test("stripMarkup copes with READMEs cut mid-construct", () => {
  assert.equal(stripMarkup("Intro\n```js\nconst a = 1;"), "Intro");
  assert.equal(stripMarkup('Intro <img src="https://x.io/a.png" alt="cut'), "Intro");
  assert.equal(stripMarkup("Intro <!-- never closed"), "Intro");
});

test("stripMarkup leaves plain text alone apart from whitespace", () => {
  assert.equal(stripMarkup("  A simple  CLI tool:\tfast,\nsafe. 100% free  "), "A simple CLI tool: fast, safe. 100% free");
  assert.equal(stripMarkup(""), "");
  assert.equal(stripMarkup("x < y and y > z"), "x < y and y > z");
});

test("stripMarkup and analyze stay fast on hostile input", () => {
  const hostile = ["<a".repeat(50_000), "[".repeat(100_000), "![x](".repeat(20_000), "```\n".repeat(20_000), "&#".repeat(50_000), "a-".repeat(100_000)];
  const t0 = performance.now();
  for (const h of hostile) analyze(stripMarkup(h));
  assert.ok(performance.now() - t0 < 2000, `took ${performance.now() - t0} ms`);
});

test('collapseWhitespace is replace(/\\s+/g, " ") on every mix of whitespace kinds, and keeps single-spaced text as it is', () => {
  const ws = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2028", "\u3000", "\ufeff", " \t", "\t "];
  let seed = 7;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  for (let i = 0; i < 20_000; i++) {
    let s = "";
    for (let j = rnd(12); j > 0; j--) s += rnd(2) === 0 ? "ab"[rnd(2)]! : ws[rnd(ws.length)]!;
    assert.equal(collapseWhitespace(s), s.replace(/\s+/g, " "), JSON.stringify(s));
  }
  const single = "Matched terms in name (cli, go); description (build)";
  assert.equal(collapseWhitespace(single), single);
});
