/**
 * The same need, phrased another way, for measuring the ranker (and, with `npm run eval -- --tune
 * --plural-weight W`, training it).
 *
 * Whether a query asks for one thing or many (`asksForMany`, the head noun's number) is among the
 * ranker's strongest cues: fame counts where a query asks for one thing ("password manager"). It is
 * also, in the training data, nearly a mark of the query set: 91 % of dev.jsonl's queries are plural
 * and 11 % of the head set's. So a head query written in the plural ("password managers") is read
 * more like a curated list's, and its well-known answer falls: the eval measures by how much
 * (`headPlural`). Training on the plural variants as well closed most of that gap and cost the queries
 * as written a little on both sets (docs/ranking.md, section 4), so the shipped ranker is not trained on them.
 */
import { asksForMany, headPhrase } from "../core/query.js";

/** Count nouns that name kinds of software, besides agent nouns ("manager", "editor", "emulator"). */
const COUNT_NOUNS = new Set([
  "agent",
  "algorithm",
  "alternative",
  "api",
  "app",
  "application",
  "assistant",
  "backend",
  "binding",
  "blog",
  "board",
  "boilerplate",
  "book",
  "bot",
  "cache",
  "calendar",
  "chat",
  "client",
  "clone",
  "cms",
  "collection",
  "command",
  "component",
  "container",
  "crm",
  "daemon",
  "dashboard",
  "database",
  "device",
  "distribution",
  "distro",
  "driver",
  "dsl",
  "engine",
  "environment",
  "erp",
  "extension",
  "firewall",
  "font",
  "fork",
  "format",
  "framework",
  "frontend",
  "game",
  "gateway",
  "hub",
  "ide",
  "implementation",
  "interface",
  "kernel",
  "kit",
  "language",
  "layer",
  "library",
  "list",
  "mesh",
  "model",
  "module",
  "orm",
  "os",
  "package",
  "panel",
  "pipeline",
  "platform",
  "plugin",
  "pool",
  "portal",
  "program",
  "prompt",
  "proxy",
  "queue",
  "registry",
  "replacement",
  "runtime",
  "sdk",
  "service",
  "shell",
  "site",
  "starter",
  "store",
  "subsystem",
  "system",
  "template",
  "terminal",
  "theme",
  "tool",
  "toolbox",
  "toolchain",
  "toolkit",
  "tree",
  "vpn",
  "website",
  "whiteboard",
  "wiki",
  "workstation",
  "wrapper",
]);

/** Words ending in -er or -or that are no agent nouns. */
const NOT_AGENT = new Set([
  "after",
  "better",
  "color",
  "error",
  "faster",
  "lighter",
  "order",
  "other",
  "paper",
  "power",
  "simpler",
  "smaller",
  "under",
  "water",
]);

function countNoun(word: string): boolean {
  if (!/^[a-z]{2,}$/.test(word)) return false;
  if (COUNT_NOUNS.has(word)) return true;
  return word.length >= 5 && /(?:er|or)$/.test(word) && !NOT_AGENT.has(word);
}

/** The plural of a count noun as written, its case kept ("library" → "libraries", "ORM" → "ORMs"). */
function plural(written: string): string {
  if (/[^aeiou]y$/i.test(written)) return `${written.slice(0, -1)}ies`;
  if (/(?:s|x|z|ch|sh)$/i.test(written)) return `${written}es`;
  return `${written}s`;
}

/**
 * The query with its head noun in the plural ("web framework for rust" → "web frameworks for rust"),
 * or null where it already asks for many or its head noun is no count noun of software ("container
 * orchestration", "password management"). The rest of the text is kept as written; an upper-case
 * noun takes a lower-case ending ("ORM" → "ORMs").
 */
export function pluralVariant(query: string): string | null {
  const head = headPhrase(query);
  if (!head.length || asksForMany(head)) return null;
  const noun = head.at(-1)!;
  if (!countNoun(noun)) return null;
  // The head noun's place in the text as written: headPhrase's tokens, found the same way.
  const masked = query.toLowerCase().replace(/\([^)]*\)/g, (m) => " ".repeat(m.length));
  const tokens = [...masked.matchAll(/[a-z0-9][a-z0-9.+#'-]*/g)];
  const at = tokens[head.length - 1];
  if (!at || at[0] !== noun) return null;
  const out = `${query.slice(0, at.index)}${plural(query.slice(at.index, at.index + noun.length))}${query.slice(at.index + noun.length)}`;
  return asksForMany(headPhrase(out)) ? out : null;
}
