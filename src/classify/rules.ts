/**
 * Rule evidence for the category classifier: weighted cue phrases per field (description, name, topics,
 * README lead, language), plus a few patterns that phrase lists cannot express. The output is a score
 * per category (and the part of it that says what the repository *is*) with the cues that produced it;
 * `classifier.ts` turns scores into one decision.
 *
 * How a cue counts depends on its kind:
 *  - form:    says what the repository is ("library", "cli", "plugin", "tutorial", "orm", "mcp server").
 *             The first form cue of a description is its head noun and counts extra; later ones count
 *             less. A form cue that is the object of a verb or preposition ("a tool for *building apps*")
 *             is what the repository works on: it counts little, or as subject matter for the domain
 *             categories ("a framework for building *LLM agents*" is about agents).
 *  - weak:    a form cue that is ambiguous in passing ("examples", "demo", "template"): it counts only as
 *             the head of the description (or in the name/topics), so "a library, with examples" stays a library.
 *  - domain:  says what the repository is about ("kubernetes", "machine learning"); no head bonus.
 *  - neutral: consumes words so a shorter cue inside them does not fire ("plugin system", "template
 *             engine" protecting "template", "scikit learn" protecting "learn").
 * After a list or tutorial head, other form nouns are its subject ("a curated list of *CLI tools*"); in
 * an awesome-* repository plural form nouns name the list's items ("Plugins, themes and resources for X").
 * A cue marked `@` counts only when the record mentions AI/LLMs somewhere ("agent" alone is as often a
 * monitoring or SSH agent).
 */
import { CATEGORIES, type Category } from "../dataset/record.js";
import type { Features } from "./features.js";

/**
 * Bump whenever any table, weight or scoring rule below changes: it is part of the classifier id, so the
 * index re-classifies. The fingerprint (rulesFingerprint) catches a forgotten bump for tables, not for code.
 */
export const RULES_VERSION = "rules-4";

type Kind = "form" | "weak" | "domain" | "neutral";
interface Cue {
  readonly cat: Category | null;
  readonly w: number;
  readonly kind: Kind;
  /** Only at the first token of the field ("^awesome" in a name). */
  readonly start: boolean;
  readonly ai: boolean;
  readonly phrase: string;
  /** The phrase is a plural noun ("plugins"): in a list, it names the items rather than the repository. */
  readonly plural: boolean;
}
interface Lexicon {
  readonly phrases: Map<string, Cue[]>;
  /** Longest phrase starting with each word: most words start none, and the scan skips them at once. */
  readonly maxWords: Map<string, number>;
}
/** [category (null = neutral), weight, kind, "phrase|phrase|..."]; "^" = first word only, "@" = needs AI context. */
type Row = readonly [Category | null, number, Kind, string];

/** The head noun of a description is what the repository is; it outweighs later mentions. */
const HEAD_BONUS = 1.3;
/** Form nouns after the head mostly name parts or features ("a library, with a CLI and plugins"). */
const NON_HEAD_FACTOR = 0.6;
/** A form cue that is the object of a verb ("a framework for *building CLIs*") is not what the repository is. */
const OBJECT_FACTOR = 0.3;
/** The README lead mostly restates the description; it corroborates rather than decides. */
const README_FACTOR = 0.5;
/** No single field may dominate through sheer repetition (ten ML topics are one fact). */
const FIELD_CAP = 6;

function plurals(phrase: string): string[] {
  const out = [phrase];
  if (/[a-z]$/.test(phrase) && !/(s|sh|ch|x)$/.test(phrase)) {
    out.push(/[^aeiou]y$/.test(phrase) ? phrase.slice(0, -1) + "ies" : phrase + "s");
  }
  return out;
}

function lexicon(rows: readonly Row[]): Lexicon {
  const phrases = new Map<string, Cue[]>();
  const maxWords = new Map<string, number>();
  for (const [cat, w, kind, list] of rows) {
    for (let raw of list.split("|")) {
      raw = raw.trim();
      const start = raw.includes("^");
      const ai = raw.includes("@");
      const base = raw.replace(/[\^@]/g, "");
      // Neutral phrases block exact wording only; cue phrases also match their plural.
      for (const phrase of kind === "neutral" ? [base] : plurals(base)) {
        const cues = phrases.get(phrase) ?? [];
        cues.push({ cat, w, kind, start, ai, phrase, plural: phrase !== base });
        phrases.set(phrase, cues);
        const words = phrase.split(" ");
        maxWords.set(words[0]!, Math.max(maxWords.get(words[0]!) ?? 0, words.length));
      }
    }
  }
  // Plurals listed explicitly ("tools" beside "tool") are plurals too.
  for (const [phrase, cues] of phrases) {
    const singular = phrase.endsWith("ies") ? phrase.slice(0, -3) + "y" : phrase.slice(0, -1);
    if (phrase.endsWith("s") && phrases.has(singular))
      phrases.set(
        phrase,
        cues.map((c) => ({ ...c, plural: true })),
      );
  }
  return { phrases, maxWords };
}

// ---------------------------------------------------------------------------------------------------
// Description (and README lead) cues.
// ---------------------------------------------------------------------------------------------------
const DESC_ROWS: Row[] = [
  // Phrases that contain a cue word but mean something else.
  [
    null,
    0,
    "neutral",
    "of course|for example|for examples|e g|adversarial example|adversarial examples|easy to learn|to learn more|learn more|user agent|ssh agent|bot api|api key|plugin system|plugin architecture|plugin support|plugins support|plugin based|plugin api|plugin apis|extensible|file extension|file extensions|template literal|template literals|template string|template strings|bootstrap your|bootstraps|command line arguments|list view|list views|todo list|to do list|task list|linked list|list of lists|frontend workshop|ui workshop",
  ],

  // curated-list
  [
    "curated-list",
    5,
    "form",
    "curated list|awesome list|list of awesome|curated collection|collection of awesome|awesome collection|curated resources|curated links|reading list|resource list|list of resources|collection of resources|collection of links|collection of papers|collection of articles|list of papers|paper list|list of tools|list of libraries|list of projects|list of apps|list of software|list of repositories|list of repos",
  ],
  ["curated-list", 4, "form", "awesome things|awesomeness|learning resources|learning materials"],
  ["curated-list", 3, "weak", "list of|lists of"],
  ["curated-list", 3, "domain", "curated"],
  ["curated-list", 2.5, "weak", "^awesome|compilation|bookmarks|resources"],
  ["curated-list", 1.5, "domain", "links|alternatives"],

  // educational
  [
    "educational",
    5,
    "form",
    "course materials|course material|crash course|interview questions|lecture notes|study notes|learning notes|learning path|learning material|code samples|sample code|for beginners|coding interview|interview preparation|self study",
  ],
  [
    "educational",
    4,
    "form",
    "tutorial|course|online course|textbook|ebook|e book|lecture|lesson|curriculum|syllabus|workshop|bootcamp|exercises|koans|kata|katas|cheatsheet|cheat sheet|handbook|homework|style guide|coding challenges|leetcode|flashcards|advent of code|project euler",
  ],
  ["educational", 4, "form", "^learn"],
  [
    "educational",
    3.5,
    "form",
    "introduction to|intro to|beginner|beginners|step by step|build your own|design patterns|best practices|explained|learn how to|hands on|teaching",
  ],
  ["educational", 3, "form", "learn|assignments|quiz|education|educational|students|learners"],
  ["educational", 4, "weak", "book"],
  [
    "educational",
    3,
    "weak",
    "examples|example|samples|sample|notes|solutions|guide|guides|guidelines|exercise|assignment|labs|challenges|roadmap|study|materials",
  ],
  ["educational", 2, "weak", "demo|demos|documentation|docs|playground|showcase|experiments|snippets"],
  ["educational", 2, "domain", "from scratch|algorithms|data structures|explanation|explanations"],

  // starter
  [
    "starter",
    5,
    "form",
    "website template|app skeleton|boilerplate|starter kit|starter template|starter project|project template|app template|application template|template repository|repository template|github template|seed project|starting point|project starter|kickstarter template",
  ],
  ["starter", 4, "form", "skeleton|kickstart|jumpstart|cookiecutter|starter code|base project|monorepo template"],
  ["starter", 3, "weak", "starter|template|templates|seed|scaffold|scaffolding|quickstart|quick start"],
  [null, 0, "neutral", "template engine|template engines|templating|template language|spring boot starter|skeleton loader|skeleton loading|skeleton screen"],

  // plugin
  [
    "plugin",
    5,
    "form",
    "vs code extension|vscode extension|visual studio code extension|visual studio extension|chrome extension|browser extension|firefox extension|firefox addon|firefox add on|web extension|safari extension|edge extension|wordpress plugin|jquery plugin|vim plugin|neovim plugin|nvim plugin|emacs package|emacs mode|major mode|minor mode|obsidian plugin|figma plugin|sketch plugin|intellij plugin|jetbrains plugin|android studio plugin|eclipse plugin|sublime text plugin|sublime plugin|atom package|kubectl plugin|gradle plugin|maven plugin|webpack plugin|babel plugin|eslint plugin|postcss plugin|rollup plugin|vite plugin|gatsby plugin|grafana plugin|jenkins plugin|minecraft mod|zsh plugin|oh my zsh plugin|oh my zsh theme|tmux plugin|home assistant integration|homebridge plugin|userscript|user script|tampermonkey script|greasemonkey script|vscode theme|vs code theme|custom component for home assistant|raycast extension|alfred workflow",
  ],
  ["plugin", 3.5, "form", "plugin|plug in|addon|add on|extension|bookmarklet"],
  ["plugin", 3, "weak", "theme|mod|github action"],
  [null, 0, "neutral", "extension methods|language extension|language extensions|extensions to"],

  // agent
  [
    "agent",
    4.5,
    "form",
    "ai agent|llm agent|autonomous agent|coding agent|agent framework@|mcp server|mcp client|ai assistant|ai agents framework|multi agent framework|multi agent system",
  ],
  ["agent", 4.5, "domain", "agentic|multi agent|model context protocol|ai orchestration|subagents|agent skills|langgraph|crewai"],
  [
    "agent",
    3,
    "domain",
    "mcp|claude code|langchain|llamaindex|llama index|autogen|function calling|tool calling|retrieval augmented generation|ai workflow|prompt engineering|computer use@|browser use",
  ],
  ["agent", 2.5, "form", "chatbot"],
  ["agent", 2.5, "domain", "rag|agents@|agent@|copilot"],
  [
    "agent",
    1.5,
    "domain",
    "assistant@|skills@|prompts@|prompt@|memory@|orchestration@|workflows@|tool use@|chatgpt|claude|llm|large language model|large language models|ollama",
  ],

  // ai-ml
  [
    "ai-ml",
    4,
    "form",
    "inference engine|inference server|deep learning framework|machine learning library|machine learning framework|deep learning library|neural network library",
  ],
  [
    "ai-ml",
    4,
    "domain",
    "llm inference|model serving|automl|hyperparameter optimization|pytorch implementation|tensorflow implementation|keras implementation",
  ],
  [
    "ai-ml",
    3.5,
    "domain",
    "machine learning|deep learning|neural network|neural networks|reinforcement learning|federated learning|transfer learning|self supervised|contrastive learning|representation learning|meta learning|image classification|object detection|semantic segmentation|instance segmentation|speech recognition|speech synthesis|pose estimation|model training|fine tuning|finetuning|fine tune|mlops|data science|experiment tracking|feature engineering|feature store|recommender system|recommendation system|dimensionality reduction|scikit learn|sklearn|diffusion model|diffusion models|generative adversarial|probabilistic programming|gaussian process|time series forecasting|natural language processing",
  ],
  [
    "ai-ml",
    3,
    "domain",
    "computer vision|nlp|pytorch|tensorflow|keras|xgboost|lightgbm|bert|gan|lstm|cnn|rnn|convolutional|quantization|language model|language models|text to speech|voice cloning|face recognition|facial recognition|stable diffusion|yolo|tensorrt|kaggle|ml|bayesian|data scientists|few shot|image generation|vision language model|huggingface|hugging face|transformers",
  ],
  [
    "ai-ml",
    2.5,
    "domain",
    "jax|inference|lora|tts|asr|onnx|artificial intelligence|forecasting|anomaly detection|data analysis|pandas|text generation|official implementation|multimodal|vlm|vision transformer",
  ],
  [
    "ai-ml",
    2,
    "domain",
    "transformer|numpy|statistics|statistical|classification|classifier|segmentation|ocr|diffusion|embeddings|embedding|zero shot|jupyter|notebooks|prediction|large language model|large language models|llm|tpu",
  ],
  ["ai-ml", 1, "domain", "ai|gpu|cuda|training|regression|clustering|paper|predict|model|models|dataset|datasets"],

  // frontend
  [
    "frontend",
    4.5,
    "form",
    "ui library|ui kit|ui toolkit|ui framework|ui component|component library|components library|css framework|css library|design system|frontend framework|front end framework|gui library|gui toolkit|gui framework|flutter widget|react native component|react component|vue component|angular component|svelte component|react hook|vue directive|angular directive|icon set|icon font|icon pack|web component",
  ],
  ["frontend", 4, "domain", "css in js|styled components|virtual dom|skeleton loader|skeleton screen"],
  [
    "frontend",
    3,
    "domain",
    "css|stylesheet|tooltip|datepicker|date picker|carousel|lightbox|slider|modal|dropdown|icons|typography|charts|charting|material design|infinite scroll|masonry layout|swiftui|jetpack compose|recyclerview|textview|imageview|progress bar|state management|frontend|front end",
  ],
  [
    "frontend",
    2.5,
    "domain",
    "sass|scss|tailwind|tailwindcss|widget|widgets|toast|chart|drag and drop|user interface|user interfaces|ui|animation|animations|responsive|layout|layouts|d3",
  ],
  ["frontend", 2, "domain", "component|components|icon|fonts|bootstrap|uikit|data visualization|spinner|dark mode"],
  [
    "frontend",
    1.5,
    "domain",
    "react|vue|vuejs|vue js|angular|angularjs|svelte|solidjs|preact|jquery|flutter|html|dom|svg|canvas|webgl|three js|font|visualization|animate|transitions",
  ],
  ["frontend", 1, "domain", "react native|hook|hooks|grid|notifications"],

  // data
  [
    "data",
    4.5,
    "form",
    "orm|object relational mapping|object relational mapper|odm|key value store|kv store|document database|graph database|vector database|time series database|tsdb|data warehouse|storage engine|query builder|database|sql database|etl tool|etl framework|database driver",
  ],
  ["data", 4.5, "domain", "data lake|lakehouse|data engineering|change data capture|database migration|schema migration"],
  ["data", 4, "domain", "data pipeline|etl|elt|stream processing|olap|oltp|data integration|data catalog|data quality|vector store"],
  ["data", 3, "domain", "nosql|sql|dataframe|big data|batch processing|dbt|cdc|event streaming|full text search|vector search|db"],
  [
    "data",
    2.5,
    "domain",
    "postgres|postgresql|mysql|sqlite|mongodb|clickhouse|cassandra|duckdb|kafka|apache spark|hadoop|flink|airflow|migrations|sharding|parquet|data processing|data validation",
  ],
  ["data", 2, "domain", "redis|elasticsearch|spark|replication|search engine|schema|message queue|message broker|spreadsheet"],
  ["data", 1.5, "domain", "cache|caching"],
  ["data", 1.5, "domain", "csv|in memory|dataset|datasets|migration|data"],

  // infrastructure
  [
    "infrastructure",
    5,
    "form",
    "kubernetes operator|service mesh|container runtime|helm chart|terraform module|terraform provider|ansible role|puppet module|chef cookbook|load balancer|reverse proxy|api gateway|monitoring system|monitoring tool|ci server|prometheus exporter",
  ],
  ["infrastructure", 5, "domain", "infrastructure as code|container orchestration|gitops|chaos engineering"],
  [
    "infrastructure",
    4,
    "domain",
    "ci cd|continuous integration|continuous delivery|continuous deployment|observability|uptime monitoring|iac|distributed tracing|log management|log aggregation|cluster management|multi cloud|cloud infrastructure|secrets management|platform as a service|paas|service discovery",
  ],
  [
    "infrastructure",
    3.5,
    "domain",
    "infrastructure|devops|cloud native|hypervisor|configuration management|site reliability|sre|cloudformation|terraform|load balancing",
  ],
  [
    "infrastructure",
    3,
    "domain",
    "kubernetes|k8s|monitoring|alerting|prometheus|ansible|provisioning|virtualization|homelab|istio|pulumi|openstack|vagrant|ingress|apm|status page",
  ],
  [
    "infrastructure",
    2.5,
    "domain",
    "helm|docker compose|dockerfile|docker image|serverless|grafana|kubectl|puppet|envoy|virtual machine|disaster recovery|object storage|deployment|deployments",
  ],
  [
    "infrastructure",
    2,
    "domain",
    "docker|container|containers|cloud|aws|azure|gcp|google cloud|metrics|tracing|orchestrator|nginx|microservices|firewall|incident|ci",
  ],
  ["infrastructure", 1.5, "domain", "deploy|deploying|logs|proxy|dns|vpn|cluster|clusters|networking|backup|backups|containerized|orchestration|nomad|systemd"],

  // tool
  [
    "tool",
    4.5,
    "form",
    "command line tool|command line utility|command line interface|command line app|cli tool|cli app|cli utility|linter|code formatter|build tool|module bundler|task runner|static analyzer|developer tool|developer tools|dev tool|static site generator|vulnerability scanner|package manager|version manager|plugin manager|testing tool",
  ],
  [
    "tool",
    3.5,
    "form",
    "cli|command line|formatter|static analysis|build system|bundler|test runner|debugger|profiler|code generator|downloader|decompiler|disassembler|fuzzer|transpiler|devtools|tui|terminal ui|security tool|hacking tool|pretty printer",
  ],
  ["tool", 3, "form", "lint|linting|testing framework|test framework|scanner|fuzzing|load testing"],
  ["tool", 2.5, "form", "tool|tools|toolset|utility|compiler|converter|scraper|crawler|shell script|penetration testing|pentest|pentesting"],
  ["tool", 2, "form", "toolbox|generator|script|scripts|benchmarking|terminal|analyzer"],
  ["tool", 1.5, "domain", "automation|automate|reverse engineering|benchmark|shell|bash|powershell|dotfiles|diff|git"],

  // library
  [
    "library",
    4,
    "form",
    "utility library|utility functions|cli library|command line parser|argument parser|argument parsing|header only|single header|tui library|http client|client library|api client|api wrapper|python package|npm package|go package|rust crate|ruby gem|python library|javascript library|typescript library|java library|c library|c++ library|go library|rust library|php library|node js library|template engine",
  ],
  ["library", 3, "form", "sdk|bindings|binding|crate|polyfill|ponyfill|wrapper|gem|extension methods"],
  ["library", 2.5, "form", "parser|shim|middleware|serializer|helpers"],
  ["library", 2.5, "form", "library|lib"],
  ["library", 2.5, "form", "driver"],
  ["library", 2.5, "weak", "api"],
  ["library", 2, "form", "adapter|helper|data structure|port of"],
  [null, 0, "neutral", "rest api|web api|graphql api|api server|devtools protocol"],
  ["library", 1.5, "form", "package|module|implementation|toolkit|functions|utils|util"],

  // framework
  [
    "framework",
    4,
    "form",
    "web framework|microframework|micro framework|full stack framework|fullstack framework|mvc framework|application framework|app framework|backend framework|server framework|rest framework|rpc framework|game framework|meta framework|php framework|javascript framework|js framework",
  ],
  ["framework", 3.5, "form", "game engine|cli framework"],
  ["framework", 2.5, "form", "framework"],
  ["framework", 1.5, "form", "mvc|opinionated|runtime|engine"],

  // application
  [
    "application",
    4.5,
    "form",
    "ebook manager|ebook reader|ebook library|ebook viewer|ebook management|e book reader|e book manager|epub reader|book reader|self hosted|selfhosted|self hostable|desktop app|desktop application|desktop client|mobile app|android app|android application|ios app|iphone app|macos app|mac app|menu bar app|menubar app|electron app|notes app|note taking app|media server|music player|audio player|media player|password manager|email client|rss reader|file manager|terminal emulator|screen recorder|open source alternative|chat app|chat application|discord bot|web browser",
  ],
  [
    "application",
    3.5,
    "form",
    "web app|web application|webapp|windows app|telegram bot|slack bot|text editor|code editor|note taking|blog engine|blogging platform|cms|content management system|video game|clone|ide|management system",
  ],
  ["application", 3, "form", "game|emulator|progressive web app|messenger|pwa|forum|personal website|video player"],
  ["application", 2.5, "form", "bot|editor|dashboard|launcher|gui|home server|ecommerce platform|e commerce platform|graphical user interface|system tray"],
  ["application", 2.5, "form", "app|application"],
  ["application", 2, "form", "client|alternative to|website|wiki|player|tracker|todo|wallpaper"],
  ["application", 2.5, "form", "wallet"],
  ["application", 1.5, "form", "blog"],
  // Generic nouns: often the environment ("in the browser", "cross-platform"), so they never take the head.
  ["application", 1.5, "domain", "software|browser|program|platform|manager|system"],
];

// ---------------------------------------------------------------------------------------------------
// Name cues (the repository part, split into words). Names are terse and deliberate, so weights are
// moderate and there is no head logic, but first-word cues ("^awesome", "^learn") are strong.
// ---------------------------------------------------------------------------------------------------
const NAME_ROWS: Row[] = [
  [null, 0, "neutral", "template engine"],
  ["curated-list", 4, "form", "awesome list|awesome lists|reading list|paper list|papers list|^best of|public apis|free programming books"],
  ["curated-list", 2, "form", "^awesome"],
  ["curated-list", 2.5, "form", "resources|papers|lists|links"],
  ["educational", 2.5, "form", "^learning"],
  [
    "educational",
    4,
    "form",
    "tutorial|^learn|course|cheatsheet|cheat sheet|exercises|workshop|koans|lessons|lecture|bootcamp|curriculum|build your own|the hard way|for beginners|interview|handbook|ebook|101|kata|homework",
  ],
  [
    "educational",
    3,
    "form",
    "learn|book|examples|example|samples|sample|notes|guide|courses|labs|leetcode|roadmap|from scratch|design patterns|study|explained|in action|demo|demos|solutions|practice|challenges|docs|documentation|playground",
  ],
  ["educational", 2, "domain", "algorithms"],
  [null, 0, "neutral", "spring boot starter|boot starter"],
  ["starter", 4.5, "form", "boilerplate|starter|starter kit|skeleton|cookiecutter|quickstart"],
  ["starter", 3, "form", "template|templates|scaffold|kickstart"],
  ["starter", 2.5, "form", "seed"],
  [
    "plugin",
    4,
    "form",
    "plugin|addon|add on|^vscode|^vim|vim|^nvim|nvim|^gatsby plugin|^babel plugin|^eslint plugin|^eslint config|^homebridge|^hubot|^gulp|^grunt|^markdown it|^imagemin|koplugin|userscript|^obsidian|oh my zsh|webpack plugin|^vite plugin|^rollup plugin|^postcss|^rehype|^remark|^hexo|^jekyll|^hass|homeassistant|^intellij|^jetbrains|^raycast|^alfred|^kubectl|^octoprint|^passport|^karma|^zsh|^tmux|^sublime|^figma|^emacs",
  ],
  ["plugin", 3, "form", "extension|extensions|theme|^chrome|^firefox|^wp|^wordpress|el|mode|^atom|^jquery|loader|mod|mods"],
  ["agent", 4, "domain", "mcp|mcp server|agents@|agent@|langchain|langgraph|autogpt|crewai"],
  ["agent", 2, "domain", "copilot|chatbot|claude|gpt|llm|assistant@|rag"],
  [
    "ai-ml",
    3,
    "domain",
    "ml|machine learning|deep learning|pytorch|torch|tensorflow|keras|bert|yolo|nlp|gan|diffusion|tts|asr|neural|transformers|segmentation|detection|detectron|llama",
  ],
  ["ai-ml", 2, "domain", "nn|ocr|classification|recognition|transformer|tf|ai|vision"],
  [
    "frontend",
    3.5,
    "domain",
    "ui|css|components|component|design system|icons|ui kit|react native|widgets|hooks|tailwind|swiftui|picker|tooltip|carousel|modal|slider|button|charts|layout",
  ],
  ["frontend", 2, "domain", "react|vue|angular|svelte|widget|chart|view|animate|animation|animations|styles|bootstrap|toast|dialog|spinner|icon"],
  ["data", 3.5, "domain", "db|database|sql|orm|etl|kv|postgres|postgresql|mysql|sqlite|mongo|mongodb|redis|migrations|dataframe"],
  ["data", 2, "domain", "dataset|datasets|data|query|store|migrate"],
  ["data", 1.5, "domain", "cache"],
  [
    "infrastructure",
    3.5,
    "domain",
    "k8s|kubernetes|kube|helm|terraform|ansible|infra|infrastructure|devops|operator|exporter|prometheus|monitoring|^puppet|^chef|helm charts|gitops",
  ],
  ["infrastructure", 2, "domain", "docker|deploy|monitor|grafana|cloud|aws|proxy|nginx|ci|vpn"],
  ["tool", 3.5, "form", "cli|lint|linter|fmt|formatter|downloader|ctl"],
  ["tool", 2.5, "form", "tool|tools|scanner|checker|converter|scraper|crawler|generator|dl|scripts|dotfiles"],
  ["library", 3, "form", "sdk|bindings|sys|^lib|lib|client lib"],
  ["library", 1.5, "form", "api|client|utils|util|kit|core"],
  // Ecosystem prefixes and suffixes ("django-x", "x-rs", "py-x") mostly name packages for that ecosystem.
  [
    "library",
    1.5,
    "domain",
    "js|py|rs|go|ex|jl|node|python|golang|rust|ruby|php|elixir|erlang|django|flask|laravel|rails|express|koa|fastapi|symfony|phoenix|ecto|swift|kotlin|scala|haskell|ocaml|clojure|perl|lua|dart|julia|ember|ng|nestjs|deno",
  ],
  ["framework", 3, "form", "framework|engine"],
  ["application", 3, "form", "app|application|clone|game|desktop|player|bot|editor|launcher|website|portfolio|homepage|dashboard|blog"],
  ["application", 1.5, "form", "server|manager|client|site"],
  ["application", 1.5, "domain", "android|ios|macos"],
];

// ---------------------------------------------------------------------------------------------------
// Topic cues: a topic is matched whole ("awesome-list" → "awesome list"). Authors pick topics on purpose,
// so the category-defining ones are strong.
// ---------------------------------------------------------------------------------------------------
const TOPIC_ROWS: Row[] = [
  ["curated-list", 5, "form", "awesome list|awesome|curated list|awesome lists|awesome resources|reading list|paper list|curated"],
  ["curated-list", 3, "form", "resources|papers|collection|lists"],
  ["curated-list", 2, "domain", "links|bookmarks"],
  [
    "educational",
    4.5,
    "form",
    "tutorial|tutorials|course|courses|education|educational|learning|learn|book|books|interview|interview questions|interview preparation|cheatsheet|cheatsheets|workshop|exercises|beginner|beginners|teaching|lecture notes|lectures|100 days of code|leetcode|leetcode solutions|kata|katas|koans|study notes|learning resources|learn to code|education resources|programming exercises|coding interview|homework|textbook|ebook",
  ],
  ["educational", 3.5, "form", "examples|example|sample|samples|notes|roadmap|design patterns|best practices|system design|university|demo"],
  ["educational", 2.5, "domain", "algorithms|data structures"],
  [
    "starter",
    4.5,
    "form",
    "boilerplate|starter|starter kit|template|starter template|boilerplate template|project template|templates|cookiecutter|scaffold|scaffolding|seed|skeleton|template repository|boilerplates|starter project",
  ],
  [
    "plugin",
    4.5,
    "form",
    "vscode extension|visual studio code extension|chrome extension|browser extension|firefox extension|firefox addon|webextension|web extension|wordpress plugin|plugin|plugins|extension|extensions|addon|add on|neovim plugin|vim plugin|nvim plugin|obsidian plugin|emacs package|jquery plugin|webpack plugin|babel plugin|eslint plugin|gatsby plugin|postcss plugin|vite plugin|rollup plugin|minecraft mod|mod|hacs|hacs integration|zsh plugin|tmux plugin|userscript|tampermonkey|greasemonkey|figma plugin|intellij plugin|jetbrains plugin|raycast extension|alfred workflow|kubectl plugin|grafana plugin|homebridge plugin|github action|vscode theme|claude code plugin",
  ],
  ["plugin", 2.5, "domain", "vscode|vim|neovim|emacs|obsidian md|obsidian|home assistant|homeassistant|oh my zsh|theme|github actions|wordpress"],
  [
    "agent",
    4.5,
    "domain",
    "ai agent|ai agents|agents@|agent@|llm agent|llm agents|autonomous agents|autonomous agent|multi agent|multi agent systems|agentic|agentic ai|mcp|mcp server|mcp servers|model context protocol|langchain|langgraph|crewai|autogen|ai assistant|claude code|agent skills|skills@|coding agent|retrieval augmented generation|llm apps",
  ],
  ["agent", 3, "domain", "rag|copilot|chatbot|prompt engineering|prompts"],
  ["agent", 2, "domain", "llm|llms|chatgpt|openai|claude|gpt|gpt 4|anthropic|large language models|ollama|gemini|deepseek"],
  [
    "ai-ml",
    4,
    "domain",
    "machine learning|deep learning|pytorch|tensorflow|ml|neural network|neural networks|nlp|natural language processing|computer vision|data science|reinforcement learning|scikit learn|keras|transformers|huggingface|mlops|deep neural networks|cnn|gan|diffusion|stable diffusion|speech recognition|object detection|kaggle|jax|llm inference|inference|fine tuning|lora|xgboost|automl|jupyter notebook|image classification|pandas|statistics|data analysis|deep reinforcement learning|text to speech|tts|ocr|artificial intelligence|generative ai|machine learning algorithms",
  ],
  ["ai-ml", 1.5, "domain", "ai|llm|llms|gpu|cuda|onnx|time series"],
  [
    "frontend",
    4.5,
    "domain",
    "ui|ui components|react components|component library|css framework|design system|ui kit|ui library|web components|vue components|frontend|front end|css|tailwindcss|tailwind|material design|icons|swiftui|flutter widget|react hooks|charts|chart|animation|scss|sass|bootstrap|components|typography|jetpack compose|datepicker|carousel|modal|tooltip|ui design",
  ],
  ["frontend", 2, "domain", "react|vue|vuejs|angular|svelte|jquery|flutter|svg|canvas|webgl|threejs|d3|data visualization|visualization|widget|hooks"],
  [
    "data",
    4.5,
    "domain",
    "database|databases|orm|sql|nosql|postgresql|postgres|mysql|sqlite|mongodb|etl|data engineering|data pipeline|big data|key value|key value store|time series database|vector database|graph database|query builder|clickhouse|duckdb|olap|data warehouse|dataframe|dbt",
  ],
  ["data", 2.5, "domain", "data|dataset|datasets|csv|cache|search engine|kafka|apache spark|spark|elasticsearch|redis|cassandra|airflow|migrations"],
  [
    "infrastructure",
    4.5,
    "domain",
    "kubernetes|k8s|devops|terraform|ansible|helm|helm chart|helm charts|monitoring|observability|prometheus|cicd|ci cd|continuous integration|continuous delivery|infrastructure|infrastructure as code|iac|gitops|cloud native|service mesh|kubernetes operator|sre|reverse proxy|load balancer|homelab|istio|openstack|pulumi",
  ],
  [
    "infrastructure",
    2.5,
    "domain",
    "ci|docker|containers|container|serverless|aws|cloud|grafana|tracing|logging|proxy|nginx|traefik|vagrant|puppet|chef|docker compose|operator|azure|gcp",
  ],
  [
    "tool",
    4.5,
    "form",
    "cli|command line|command line tool|command line interface|developer tools|devtools|linter|formatter|static analysis|build tool|bundler|debugger|profiler|code generator|tui|tool|tools|utility|package manager|security tools|hacking tool",
  ],
  ["tool", 2.5, "domain", "terminal|compiler|testing|fuzzing|pentest|penetration testing"],
  ["tool", 1.5, "domain", "shell|bash|automation|productivity|git|zsh|dotfiles"],
  [
    "library",
    4,
    "form",
    "library|lib|sdk|api client|api wrapper|wrapper|bindings|npm package|python library|python package|javascript library|typescript library|rust library|crate|gem|header only|parser|polyfill|module|package|client library",
  ],
  ["framework", 4, "form", "framework|web framework|mvc|microframework|game engine|full stack framework|php framework"],
  [
    "application",
    4.5,
    "form",
    "ebook manager|ebook reader|ebook library|epub reader|self hosted|selfhosted|app|application|android app|ios app|desktop app|desktop application|electron app|webapp|web app|pwa|cms|discord bot|telegram bot|note taking|music player|media server|password manager",
  ],
  ["application", 3, "form", "game|games|bot|emulator|editor|text editor|ide|dashboard"],
  ["application", 1.5, "domain", "android|ios|macos|electron|windows|linux"],
];

/** Primary languages that say something on their own (weakly): configuration and editor languages. */
const LANGUAGE_CUES: Readonly<Record<string, readonly [Category, number]>> = {
  "vim script": ["plugin", 2.5],
  vimscript: ["plugin", 2.5],
  "vim l": ["plugin", 2.5],
  "emacs lisp": ["plugin", 2],
  hcl: ["infrastructure", 2.5],
  dockerfile: ["infrastructure", 2],
  "jupyter notebook": ["ai-ml", 1.5],
  css: ["frontend", 1.5],
  scss: ["frontend", 1.5],
  less: ["frontend", 1.5],
  vue: ["frontend", 1],
  svelte: ["frontend", 1],
  plpgsql: ["data", 2],
  tsql: ["data", 2],
  tex: ["educational", 1.5],
};

/**
 * CJK descriptions have no spaces, so their cues are substrings. Many descriptions in the dataset are
 * Chinese (trending lists), so the main categories need Chinese cues. "学习" (learn) is excluded where
 * it is part of 机器学习 / 深度学习 (machine / deep learning); "库" (library) where it is part of 数据库 etc.
 */
const CJK_RULES: readonly (readonly [Category, number, RegExp])[] = [
  ["curated-list", 4.5, /(资源|项目|工具|开源|文章|论文|书籍|教程|软件|插件|网站)(汇总|合集|大全|整理|精选|列表|收集|导航)/],
  ["curated-list", 2.5, /汇总|合集|大全|精选|收集整理|收录|清单|まとめ|一覧|모음|목록|리스트/],
  ["educational", 5, /教程|课程|入门|面试|讲义|题解|刷题|学习路线|学习资料|学习指南|源码(分析|解析|阅读)/],
  ["educational", 3.5, /笔记/],
  ["educational", 3, /教学|练习|示例|实战|指南|手册|中文(版|翻译)|翻译|入門|講座|チュートリアル|勉強|강의|강좌|튜토리얼|공부/],
  ["educational", 2.5, /(?<!机器|深度|强化|联邦|迁移|元|对比|自监督|监督|表征|表示|集成|度量|持续|主动)学习/],
  ["starter", 4.5, /脚手架/],
  ["starter", 3, /模板|模版|样板|骨架/],
  ["plugin", 4, /插件|油猴脚本|扩展程序/],
  ["plugin", 2.5, /扩展|主题/],
  ["tool", 4, /命令行/],
  ["tool", 3, /工具|爬虫|下载器/],
  ["tool", 2, /脚本/],
  ["library", 2.5, /类库|(?<!数据|仓|代码|知识|题|资源|组件|词|模型|图)库/],
  ["framework", 3, /框架/],
  ["application", 3, /客户端|管理系统|播放器|阅读器|小程序|游戏|商城/],
  ["application", 2, /软件|应用|网站|博客|浏览器/],
  ["frontend", 4.5, /组件库|ui库/],
  ["frontend", 3, /组件|前端|图标|图表/],
  ["frontend", 2, /样式|动画/],
  ["ai-ml", 3.5, /机器学习|深度学习|神经网络|强化学习|模型训练|计算机视觉|自然语言处理|目标检测|语音识别|数据科学/],
  ["ai-ml", 2.5, /人工智能|数据分析|推理|大模型|微调/],
  ["agent", 4.5, /智能体/],
  ["agent", 3, /ai ?助手|ai ?代理/],
  ["data", 4, /数据库|数据仓库|数据同步|数据湖/],
  ["data", 2.5, /数据处理|数据集|缓存|搜索引擎/],
  ["infrastructure", 4, /云原生|持续集成|运维/],
  ["infrastructure", 3, /监控|容器|负载均衡|集群|网关/],
  ["infrastructure", 2, /部署|代理/],
];
/** Categories that say what a repository is about rather than what it is (for cues that carry no kind). */
const DOMAIN_CATEGORIES: ReadonlySet<Category> = new Set(["agent", "ai-ml", "frontend", "data", "infrastructure"]);
const CJK_RE = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/;

/** Words that make a record "about AI", which `@` cues need. */
const AI_WORDS = new Set(
  "ai llm llms gpt chatgpt openai claude anthropic gemini langchain mcp copilot ollama deepseek qwen mistral llama agentic autonomous rag codex".split(" "),
);
const AI_CJK_RE = /人工智能|大模型|智能体|大语言模型/;

/**
 * Words after which a form noun names what the repository works on or is for, not what it is: verbs
 * ("a tool for *building apps*") and a few prepositions ("a boilerplate *for React apps*", "a sample *using
 * the library*"). The head noun normally comes before them.
 */
const OBJECT_WORDS = new Set(
  (
    "build building builds create creating creates make making makes write writing writes develop developing develops " +
    "generate generates generating manage manages managing convert converts deploy deploys install installs browse discover find " +
    "return returns fetch fetches handle handles validate validates extract extracts " +
    "for with using via into your"
  ).split(" "),
);
const OBJECT_WINDOW = 3;
/** Verbs that take a list as their object ("gives you a huge list of", "displays a list of") besides OBJECT_WORDS. */
const LIST_VERBS = new Set(
  "to you get gets display displays show shows give gives print prints output outputs produce produces concat concats transform transforms distribute distributes".split(
    " ",
  ),
);
/** Whether one of the OBJECT_WINDOW tokens before token `pos` is an object word, or one of `extra`. */
function objectWordBefore(tokens: readonly string[], pos: number, extra?: ReadonlySet<string>): boolean {
  for (let j = Math.max(0, pos - OBJECT_WINDOW); j < pos; j++) if (OBJECT_WORDS.has(tokens[j]!) || extra?.has(tokens[j]!)) return true;
  return false;
}
/** The index of the token that character `at` of the space-joined tokens falls in. */
function tokenIndexAt(joined: string, at: number): number {
  let n = 0;
  for (let i = joined.indexOf(" "); i !== -1 && i < at; i = joined.indexOf(" ", i + 1)) n++;
  return n;
}
/** A hidden-category noun can be the description's head only among its first this many tokens (README: no limit). */
const HIDDEN_HEAD_WINDOW = 20;

/** Categories excluded from default search: a wrong answer hides a real project, so they need more evidence. */
export const HIDDEN_CATEGORIES: ReadonlySet<Category | null> = new Set<Category>(["curated-list", "educational"]);
/**
 * Nouns that, right after a hidden-category cue, make the cue a modifier of what the repository is: "an
 * interactive cheatsheet *tool*", "an EPUB ebook *editor*", "a digital book *server*". Singular only: in
 * "Tutorials, tools, and more" the comma is gone from the tokens, and the plural is a list of things.
 */
const TOOL_HEADS = new Set("tool editor viewer reader client cli engine server manager generator player browser library framework extension plugin".split(" "));
/**
 * Hidden-category nouns that also name a tool figuratively: "the industry standard workshop *for building*
 * UI components" (Storybook), "a playground *to generate* images". Followed by "for"/"to" and a making
 * verb, they are what the repository is for, not a course. Nouns that are only ever teaching ("tutorials
 * for building agents") are not in the set.
 */
const FIGURATIVE = new Set(["workshop", "playground", "playgrounds", "showcase"]);
const MAKING_VERBS = new Set(
  "build building create creating develop developing generate generating make making manage managing run running deploy deploying design designing edit editing track tracking host hosting automate automating".split(
    " ",
  ),
);
const ML_VENUES = [
  "cvpr",
  "iccv",
  "eccv",
  "nips",
  "neurips",
  "icml",
  "iclr",
  "aaai",
  "ijcai",
  "emnlp",
  "naacl",
  "miccai",
  "interspeech",
  "icassp",
  "wacv",
  "bmvc",
  "coling",
  "kdd",
];
/** A venue (with its year: "eccv18") before a hidden cue names where a paper appeared: "ECCV18 Workshops", "EMNLP 2025 Demo". */
const VENUE_TOKEN_RE = new RegExp(`^(${ML_VENUES.join("|")})\\d*$`);

/**
 * Whether a curated-list or educational cue says what the repository works on rather than what it is.
 * Measured on the whole dataset: it un-hides 33 repositories (navi, Sigil, ESRGAN, PDFMathTranslate …), 31
 * of them tools or research code by a reading of each; on the labelled sample, one tool.
 */
function hiddenCueIsSubject(tokens: readonly string[], pos: number, phrase: string): boolean {
  const end = pos + phrase.split(" ").length;
  const after = tokens[end];
  if (after !== undefined && TOOL_HEADS.has(after)) return true;
  if (FIGURATIVE.has(phrase) && (after === "for" || after === "to") && MAKING_VERBS.has(tokens[end + 1] ?? "")) return true;
  for (let j = Math.max(0, pos - 2); j < pos; j++) if (VENUE_TOKEN_RE.test(tokens[j]!)) return true;
  return false;
}

/** Plural nouns for kinds of resources: a description that enumerates several is describing a list. */
const RESOURCE_NOUNS = new Set(
  (
    "resources links libraries tools frameworks plugins themes articles books papers videos courses tutorials talks blogs podcasts " +
    "websites sites projects packages datasets apps applications software extensions newsletters guides cheatsheets demos examples " +
    "communities conferences people companies events repositories repos services materials posts slides presentations"
  ).split(" "),
);
const ENUMERATION_MIN = 3;

const DESC_LEX = lexicon(DESC_ROWS);
const NAME_LEX = lexicon(NAME_ROWS);
const TOPIC_LEX = lexicon(TOPIC_ROWS);

/**
 * Regex cues over the description that phrase lists cannot express. They run on the space-joined tokens
 * ("node.js" → "node js", "add-on" → "add on"), and only when the cheap `pre` substring is present.
 */
interface Pattern {
  readonly cat: Category;
  readonly w: number;
  readonly kind: Kind;
  /** The regex runs only when one of these substrings occurs (a cheap filter: most descriptions match none). */
  readonly pre: readonly string[];
  readonly re: RegExp;
  readonly label: string;
  /** Counts only when no verb or preposition comes just before the match: "a list of games", not "concats a list of videos". */
  readonly subjectOnly?: boolean;
}
/** What a directory or list enumerates ("a list of *games*", "an index of *papers*"), as a regex alternation. */
const LISTED_KINDS =
  "resources|links|libraries|tools|projects|software|apps|applications|frameworks|packages|plugins|extensions|papers|articles|books|courses|tutorials|talks|videos|blogs|podcasts|websites|sites|datasets|apis|companies|people|repositories|repos|servers|games|themes|services|alternatives|materials|references|newsletters|conferences|communities";
const DESC_PATTERNS: readonly Pattern[] = [
  {
    cat: "educational",
    w: 5,
    kind: "form",
    pre: [" in "],
    re: /\b(learn|master|teach yourself)\b.{0,60}\bin \d+ (days|hours|minutes|weeks|steps|lessons)\b/,
    label: "learn X in N days",
  },
  { cat: "educational", w: 5, kind: "form", pre: ["day"], re: /\b\d+ days of\b|\bdays? \d+ of \d+\b/, label: "N days of" },
  {
    cat: "educational",
    w: 4,
    kind: "form",
    pre: ["book", "course", "lecture", "workshop", "tutorial", "talk", "video", "mooc", "speciali", "bootcamp"],
    re: /\b(code|examples?|exercises|solutions|source|materials?|notebooks?|slides|implementations?|answers|notes)\b.{0,40}\b(for|from|of|to|accompanying|in)\b.{0,50}\b(book|course|lecture|lectures|workshop|tutorial|talk|video series|textbook|mooc|specialization|bootcamp)s?\b/,
    label: "companion to a book/course",
  },
  {
    cat: "educational",
    w: 3.5,
    kind: "form",
    pre: ["how to", "guide", "introduction", "understanding", "mastering"],
    re: /^(how to|a guide to|the complete guide|a practical guide|an introduction|understanding|mastering)\b/,
    label: "guide-style opening",
  },
  {
    cat: "curated-list",
    w: 4,
    kind: "form",
    pre: [" of "],
    re: new RegExp(`\\b(directory|catalog|catalogue|compilation|roundup|index) of (\\S+ ){0,3}?(${LISTED_KINDS})\\b`),
    label: "directory of resources",
  },
  {
    cat: "curated-list",
    w: 4,
    kind: "form",
    pre: ["list of ", "lists of ", "listing of "],
    re: new RegExp(`\\b(list|lists|listing) of (\\S+ ){0,3}?(${LISTED_KINDS})\\b`),
    label: "list of resources",
    subjectOnly: true,
  },
  {
    cat: "curated-list",
    w: 3,
    kind: "form",
    pre: ["collection of "],
    re: /\bcollection of (\S+ ){0,2}?(useful |interesting |great |best |popular |notable |open source |free |handy |cool )(\S+ ){0,2}?(libraries|tools|projects|software|apps|frameworks|packages|repositories|repos|resources)\b/,
    label: "collection of notable projects",
  },
  {
    cat: "plugin",
    w: 5,
    kind: "form",
    pre: ["for "],
    re: /\b(plugins?|extensions?|add ?ons?|addons?|integrations?|mods?|themes?|packages?) for (the )?(visual studio( code)?|vs ?code|vim|neovim|nvim|emacs|sublime( text)?|atom|intellij( idea)?|jetbrains|eclipse|android studio|xcode|chrome|chromium|firefox|safari|edge|wordpress|jquery|obsidian|figma|sketch|blender|unity|godot|minecraft|gradle|maven|webpack|babel|eslint|rollup|vite|gatsby|grafana|jenkins|kubectl|zsh|oh[ -]my[ -]zsh|tmux|home ?assistant|homebridge|jupyter(lab)?|garry ?s mod|photoshop|gimp|inkscape|krita|obs|discord|slack|mattermost|nextcloud|octoprint|kodi|jellyfin|plex|anki|thunderbird|joplin|logseq|raycast|alfred|vuepress|hexo|hugo|jekyll|ghost|shopify|woocommerce|magento|drupal|joomla|moodle|redmine|keycloak|kong|traefik|backstage|docusaurus|mkdocs|sphinx|pytest|jest|mocha|karma|gulp|grunt|postcss|tailwind(css)?|capacitor|cordova|ionic|nativescript|flutter|strapi|directus|payload|sanity|n8n|node red|telegraf|fluentd|logstash|kibana|elasticsearch|prometheus|terraform|ansible|vagrant|packer|docker|kubernetes|helm|argo ?cd|airflow|dbt|superset|metabase|tableau|excel|google sheets|notion|trello|jira|confluence|github|gitlab|bitbucket)\b/,
    label: "add-on for a host",
  },
  {
    cat: "library",
    w: 2,
    kind: "domain",
    pre: ["for "],
    re: /\bfor (the )?(node ?js|node|nodejs|python( ?3)?|go|golang|rust|elixir|erlang|ruby|php|java|kotlin|scala|clojure|haskell|ocaml|swift|dart|julia|lua|perl|c\+\+|c#|javascript|typescript|deno|bun|react|react native|vue( ?js)?|angular( ?js)?|svelte|django|flask|fastapi|laravel|rails|ruby on rails|symfony|express|koa|spring( boot)?|phoenix|ecto|micropython|arduino|esp32|esp8266|pytorch|tensorflow|pandas|numpy)( (apps|applications|projects))?\b/,
    label: "for an ecosystem",
  },
  {
    cat: "application",
    w: 1.5,
    kind: "domain",
    pre: ["for ", "on "],
    re: /\b(for|on) (android|ios|iphone|ipad|macos|mac|windows|linux|desktop|the desktop)\b/,
    label: "for a platform",
  },
  {
    cat: "ai-ml",
    w: 3,
    kind: "domain",
    pre: ML_VENUES,
    re: new RegExp(`\\b(${ML_VENUES.join("|")})\\b`),
    label: "ML venue",
  },
  { cat: "ai-ml", w: 2, kind: "domain", pre: ["paper"], re: /\b(code|implementation) (for|of) (the |our )?paper\b/, label: "paper code" },
];

/** README signals: the awesome-list badge (not the "mentioned in awesome" one), and a wall of bullet links. */
const AWESOME_BADGE_RE = /awesome\.re\/badge(?!-?mentioned)|sindresorhus\/awesome(?!-)/i;
const BULLET_LINK_RE = /^\s*[-*] \[[^\]]+\]\([^)]+\)/gm;

/** One piece of evidence, kept for the `reason` string. */
export interface Evidence {
  readonly cat: Category;
  readonly w: number;
  readonly field: "desc" | "name" | "topic" | "readme" | "lang";
  readonly cue: string;
  /** Says what the repository is (form) rather than what it is about (domain). */
  readonly form: boolean;
}

export interface RuleResult {
  /** Score per category, indexed like CATEGORIES. */
  readonly scores: Float64Array;
  /** The part of each score that came from form cues (what the repository is). */
  readonly formScores: Float64Array;
  readonly evidence: readonly Evidence[];
}

export const CAT_INDEX: Readonly<Record<Category, number>> = Object.fromEntries(CATEGORIES.map((c, i) => [c, i])) as Record<Category, number>;

interface Match {
  readonly cue: Cue;
  readonly pos: number;
}

/** Greedy longest-match scan: at each position the longest known phrase wins and consumes its words. */
function scan(tokens: readonly string[], lex: Lexicon): Match[] {
  const out: Match[] = [];
  const n = tokens.length;
  let i = 0;
  while (i < n) {
    const maxLen = lex.maxWords.get(tokens[i]!);
    if (maxLen === undefined) {
      i++;
      continue;
    }
    const keys = [tokens[i]!];
    for (let len = 2; len <= maxLen && i + len <= n; len++) keys.push(keys[len - 2]! + " " + tokens[i + len - 1]!);
    let advanced = false;
    for (let len = keys.length; len >= 1 && !advanced; len--) {
      const cues = lex.phrases.get(keys[len - 1]!);
      if (!cues) continue;
      for (const cue of cues) {
        if (cue.start && i !== 0) continue;
        out.push({ cue, pos: i });
        advanced = true;
      }
      if (advanced) i += len;
    }
    if (!advanced) i++;
  }
  return out;
}

const SCRATCH_TOTAL = new Float64Array(CATEGORIES.length);
const SCRATCH_FORM = new Float64Array(CATEGORIES.length);

/** Per-field accumulator: a phrase counts once per field (its best weight), and each category is capped per field. */
class FieldScore {
  readonly items: Evidence[] = [];
  constructor(private readonly field: Evidence["field"]) {}
  add(cat: Category, w: number, cue: string, form: boolean): void {
    if (w <= 0) return;
    for (let k = 0; k < this.items.length; k++) {
      const e = this.items[k]!;
      if (e.cat === cat && e.cue === cue) {
        if (e.w < w) this.items[k] = { cat, w, field: this.field, cue, form };
        return;
      }
    }
    this.items.push({ cat, w, field: this.field, cue, form });
  }
  /** True when some form cue of another category weighs at least `min` (a rival for what the repository is). */
  hasRivalForm(cat: Category, min: number): boolean {
    return this.items.some((e) => e.form && e.cat !== cat && e.w >= min);
  }
  flush(out: { scores: Float64Array; formScores: Float64Array; evidence: Evidence[] }, factor = 1): void {
    if (this.items.length === 0) return;
    const total = SCRATCH_TOTAL.fill(0);
    const form = SCRATCH_FORM.fill(0);
    for (const e of this.items) {
      const c = CAT_INDEX[e.cat];
      total[c]! += e.w;
      if (e.form) form[c]! += e.w;
      out.evidence.push(factor === 1 ? e : { ...e, w: e.w * factor });
    }
    for (let c = 0; c < total.length; c++) {
      if (total[c] === 0) continue;
      const capped = Math.min(FIELD_CAP, total[c]!) * factor;
      out.scores[c]! += capped;
      out.formScores[c]! += (capped * form[c]!) / total[c]!;
    }
  }
}

function hasAiContext(f: Features): boolean {
  for (const t of f.descTokens) if (AI_WORDS.has(t)) return true;
  for (const t of f.nameTokens) if (AI_WORDS.has(t)) return true;
  for (const t of f.topicPhrases) for (const w of t.split(" ")) if (AI_WORDS.has(w)) return true;
  if (/\b(language models?|artificial intelligence)\b/.test(f.desc)) return true;
  return CJK_RE.test(f.desc) && AI_CJK_RE.test(f.desc);
}

/**
 * Prose (description or README lead): head bonus, object discount, weak cues only as head. In a list
 * context (an awesome-* repository) plural form nouns name the list's items ("Plugins, themes and
 * resources for X"), so they count as subject matter, and a plural head counts for the list.
 */
function scoreProse(
  tokens: readonly string[],
  text: string,
  into: FieldScore,
  ai: () => boolean,
  listContext: boolean,
  hiddenHeadWindow: number,
): Category | null {
  let headTaken = false;
  let headCat: Category | null = null;
  for (const { cue, pos } of scan(tokens, DESC_LEX)) {
    if (cue.kind === "neutral" || cue.cat === null) continue;
    if (cue.ai && !ai()) continue;
    if (cue.kind === "domain") {
      into.add(cue.cat, cue.w, cue.phrase, false);
      continue;
    }
    const isObject = (HIDDEN_CATEGORIES.has(cue.cat) && hiddenCueIsSubject(tokens, pos, cue.phrase)) || objectWordBefore(tokens, pos);
    if (isObject) {
      // "a framework for building *LLM agents*": not what it is, but still what it is about.
      if (DOMAIN_CATEGORIES.has(cue.cat)) into.add(cue.cat, cue.w, cue.phrase, false);
      else if (cue.kind === "form") into.add(cue.cat, cue.w * OBJECT_FACTOR, cue.phrase, true);
      continue;
    }
    // A course or list says so early; the same noun far into a product's description is a use or a
    // feature ("… can also be employed for competitive coding challenges", "… from speaker notes").
    const isHead = !headTaken && !(HIDDEN_CATEGORIES.has(cue.cat) && pos >= hiddenHeadWindow);
    headTaken = true;
    if (isHead) headCat = cue.cat;
    if (cue.kind === "weak" && !isHead) continue; // a passing mention ("a library, with examples")
    // After a list or tutorial head, other form nouns are its subject: "a curated list of *CLI tools*".
    if (!isHead && (headCat === "curated-list" || headCat === "educational") && cue.cat !== headCat) {
      into.add(cue.cat, cue.w * NON_HEAD_FACTOR, cue.phrase, false);
      continue;
    }
    if (listContext && cue.plural && cue.cat !== "curated-list") {
      into.add(cue.cat, cue.w, cue.phrase, false);
      if (isHead) into.add("curated-list", 3, "plural head", true);
      continue;
    }
    into.add(cue.cat, cue.w * (isHead ? HEAD_BONUS : NON_HEAD_FACTOR), cue.phrase, true);
  }
  const joined = tokens.join(" ");
  for (const p of DESC_PATTERNS) {
    if (!p.pre.some((x) => joined.includes(x))) continue;
    const m = p.re.exec(joined);
    if (m && !(p.subjectOnly && objectWordBefore(tokens, tokenIndexAt(joined, m.index), LIST_VERBS))) into.add(p.cat, p.w, p.label, p.kind !== "domain");
  }
  if (CJK_RE.test(text)) {
    for (const [cat, w, re] of CJK_RULES) {
      const m = re.exec(text);
      if (m) into.add(cat, w, m[0], !DOMAIN_CATEGORIES.has(cat));
    }
  }
  let nouns = 0;
  const seen = new Set<string>();
  for (const t of tokens)
    if (RESOURCE_NOUNS.has(t) && !seen.has(t)) {
      seen.add(t);
      nouns++;
    }
  if (nouns >= ENUMERATION_MIN) into.add("curated-list", 3, "enumerates resources", false);
  return headCat;
}

function scoreTerse(cues: Iterable<Cue>, into: FieldScore, ai: () => boolean, listContext = false): void {
  for (const cue of cues) {
    if (cue.kind === "neutral" || cue.cat === null) continue;
    if (cue.ai && !ai()) continue;
    into.add(cue.cat, cue.w, cue.phrase, cue.kind !== "domain" && !(listContext && cue.plural));
  }
}

/** "awesome-x" (with a separator) is the awesome-list naming convention; "AwesomeDrawer" is just an adjective. */
const AWESOME_NAME_RE = /^awesome[-_.]/i;

export function ruleScores(f: Features): RuleResult {
  const out = { scores: new Float64Array(CATEGORIES.length), formScores: new Float64Array(CATEGORIES.length), evidence: [] as Evidence[] };
  let aiMemo: boolean | undefined;
  const ai = () => (aiMemo ??= hasAiContext(f));

  const awesomeName = AWESOME_NAME_RE.test(f.repo);
  const desc = new FieldScore("desc");
  const descHead = scoreProse(f.descTokens, f.desc, desc, ai, awesomeName, HIDDEN_HEAD_WINDOW);

  // A description that opens as a list makes the name's plural nouns its items, as awesome-* does:
  // "open-source-ios-apps", "Collaborative List of Open-Source iOS Apps".
  const listName = awesomeName || descHead === "curated-list";
  const name = new FieldScore("name");
  for (const m of scan(f.nameTokens, NAME_LEX)) scoreTerse([m.cue], name, ai, listName);
  if (f.nameTokens.length > 0 && /^lib[a-z0-9]{2,}$/.test(f.nameTokens[0]!)) name.add("library", 2.5, "lib*", true);
  if (awesomeName) {
    // Decisive on its own only when nothing in the description or name says it is something else.
    const alone = !desc.hasRivalForm("curated-list", 1) && !name.hasRivalForm("curated-list", 1);
    name.add("curated-list", alone ? 5.5 : 4.5, "awesome-*", true);
  }
  desc.flush(out);
  name.flush(out);

  const topics = new FieldScore("topic");
  for (const t of f.topicPhrases) {
    const cues = TOPIC_LEX.phrases.get(t);
    if (cues) scoreTerse(cues, topics, ai);
  }
  topics.flush(out);

  if (f.readmeRaw) {
    const readme = new FieldScore("readme");
    // The README lead opens with badges and headings; its first words are not a head the way a description's are.
    scoreProse(f.readmeTokens, f.readme, readme, ai, awesomeName, Infinity);
    if (AWESOME_BADGE_RE.test(f.readmeRaw)) readme.add("curated-list", 8, "awesome badge", true);
    const bullets = f.readmeRaw.match(BULLET_LINK_RE)?.length ?? 0;
    if (bullets >= 8) readme.add("curated-list", 4, "bullet links", true);
    readme.flush(out, README_FACTOR);
  }

  const lang = LANGUAGE_CUES[f.lang];
  if (lang) {
    out.scores[CAT_INDEX[lang[0]]!]! += lang[1];
    out.evidence.push({ cat: lang[0], w: lang[1], field: "lang", cue: f.lang, form: false });
  }
  return out;
}

/** A fingerprint of every table above, so any edit changes the classifier id even if RULES_VERSION is forgotten. */
export function rulesFingerprint(): string {
  return JSON.stringify([
    RULES_VERSION,
    HEAD_BONUS,
    NON_HEAD_FACTOR,
    OBJECT_FACTOR,
    HIDDEN_HEAD_WINDOW,
    README_FACTOR,
    FIELD_CAP,
    ENUMERATION_MIN,
    DESC_ROWS,
    NAME_ROWS,
    TOPIC_ROWS,
    LANGUAGE_CUES,
    CJK_RULES.map(([c, w, re]) => [c, w, re.source]),
    DESC_PATTERNS.map((p) => [p.cat, p.w, p.kind, p.pre, p.re.source]),
    [...OBJECT_WORDS],
    [...TOOL_HEADS],
    VENUE_TOKEN_RE.source,
    [...RESOURCE_NOUNS],
    [...AI_WORDS],
    AWESOME_NAME_RE.source,
  ]);
}
