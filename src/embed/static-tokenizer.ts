/**
 * Word tokenizer of the distilled static embedder. Unlike the lexical analyzer it does not stem:
 * every vocabulary entry is embedded by the teacher as a real word, and "libraries" must stay a word.
 * Identifiers are split (camelCase, snake_case, digits) and hyphenated compounds are kept whole as well,
 * because the teacher embeds "command-line" or "machine-learning" better as a phrase than by parts.
 */
const WORD_RE = /[\p{L}\p{N}]+(?:[-_.+#][\p{L}\p{N}]+)*[+#]*/gu;
// An acronym ends before an uppercase letter followed by 2+ lowercase ones: "XMLParser" → XML|Parser,
// while a plural acronym stays whole: "CLIs".
const CAMEL_RE = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll}{2,})/u;
const CJK_RE = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/u;
const MAX_TOKEN = 40;

export function staticTokens(text: string, out: string[] = []): string[] {
  for (const m of text.matchAll(WORD_RE)) {
    const raw = m[0];
    if (raw.length > 3 * MAX_TOKEN) continue;
    const lower = raw.toLowerCase();
    // CJK runs: character bigrams; the teacher knows little of them, but they still join related texts.
    if (CJK_RE.test(raw)) {
      const chars = [...lower];
      for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
      if (chars.length === 1) out.push(chars[0]!);
      continue;
    }
    const hasJoin = /[-_.]/.test(raw);
    if (hasJoin && lower.length <= MAX_TOKEN) out.push(lower);
    for (const part of raw.split(/[-_.]+/)) {
      if (!part) continue;
      const pieces = part.split(CAMEL_RE);
      if (pieces.length > 1) {
        const joined = part.toLowerCase();
        if (joined.length <= MAX_TOKEN) out.push(joined);
      }
      for (const p of pieces) {
        const lp = p.toLowerCase();
        if (lp.length >= 1 && lp.length <= MAX_TOKEN && !/^\d{5,}$/.test(lp)) out.push(lp);
      }
    }
  }
  return out;
}
