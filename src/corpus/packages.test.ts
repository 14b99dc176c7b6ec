import { describe, it } from "vitest";
import assert from "node:assert/strict";
import type { RepoRecord } from "../dataset/record.js";
import { lexicalDocOf } from "../store/bm25f.js";
import { rec as base } from "../../test/support/test-records.js";
import { prepareCorpus, toPayload } from "./prepare.js";
import {
  baseName,
  cleanSummary,
  joinPackages,
  newestFirst,
  normalizeHomepage,
  parseDebianIndexes,
  shippedPackages,
  siteName,
  type PackageEntry,
} from "./packages.js";

const rec = (name: string, o: Partial<RepoRecord> = {}): RepoRecord => base(name, null, { stars: 1000, ...o });

const pkg = (source: string, homepage: string | null, text = `${source} text`): PackageEntry => ({ source, homepage, text });

describe("Debian's indexes", () => {
  const packages = [
    "Package: wireshark",
    "Version: 4.0.11-1",
    "Homepage: https://www.wireshark.org/",
    "Description: network traffic analyzer - meta-package",
    "Description-md5: e2e26f45272009095cc47933b48129a6",
    "",
    "Package: libwireshark-dev",
    "Source: wireshark (4.0.11-1)",
    "Description: network packet dissection library -- development files",
    "",
    "Package: python3-fastapi",
    "Source: fastapi",
    "Homepage: https://github.com/tiangolo/fastapi",
    "Description: modern, fast, web framework for building APIs, based on type hints (Python 3)",
    "",
    "Package: fastapi-doc",
    "Source: fastapi",
    "Description: documentation",
    "",
  ].join("\n");
  const translations = [
    "Package: wireshark",
    "Description-md5: e2e26f45272009095cc47933b48129a6",
    "Description-en: network traffic analyzer - meta-package",
    ' Wireshark is a network "sniffer" - a tool that captures and analyzes',
    " packets off the wire.",
    " .",
    " This is a meta-package for Wireshark.",
    "",
  ].join("\n");

  it("one entry per source package: its main binary's summary without qualifiers, and the long description's first paragraph", () => {
    const got = parseDebianIndexes(packages, translations);
    assert.deepEqual(got, [
      { source: "fastapi", homepage: "github.com/tiangolo/fastapi", text: "modern, fast, web framework for building APIs, based on type hints" },
      {
        source: "wireshark",
        homepage: "wireshark.org",
        text: 'network traffic analyzer. Wireshark is a network "sniffer" - a tool that captures and analyzes packets off the wire',
      },
    ]);
    // Without Translation-en, the summary alone.
    assert.equal(parseDebianIndexes(packages, null)[1]!.text, "network traffic analyzer");
  });

  it("a Rust crate's package says what the crate is in its summary, not in debcargo's stock sentence", () => {
    const [e] = parseDebianIndexes(
      [
        "Package: librust-anyhow-dev",
        "Source: rust-anyhow",
        "Description: Flexible concrete Error type built on std::error::Error - Rust source code",
        "",
      ].join("\n"),
      [
        "Package: librust-anyhow-dev",
        "Description-en: Flexible concrete Error type - Rust source code",
        ' Source code for Debianized Rust crate "anyhow"',
        "",
      ].join("\n"),
    );
    assert.equal(e?.text, "Flexible concrete Error type built on std::error::Error");
  });

  it("normalises homepages, strips version suffixes and Debian's qualifiers", () => {
    assert.equal(normalizeHomepage("https://www.PostgreSQL.org/"), "postgresql.org");
    assert.equal(normalizeHomepage("https://github.com/BurntSushi/ripgrep.git"), "github.com/burntsushi/ripgrep");
    assert.equal(normalizeHomepage("http://example.org/docs/?lang=en#top"), "example.org/docs");
    assert.equal(baseName("lua5.4"), "lua");
    assert.equal(siteName("gimp.org/downloads"), "gimp");
    assert.equal(siteName("localhost"), null);
    assert.equal(baseName("postgresql-15"), "postgresql");
    assert.equal(cleanSummary("Persistent key-value database with network interface (metapackage)"), "Persistent key-value database with network interface");
    assert.equal(cleanSummary("network traffic analyzer - meta-package"), "network traffic analyzer");
  });
});

describe("joining packages to projects", () => {
  const records = [
    rec("tiangolo/fastapi", { aliases: ["fastapi/fastapi-old"] }),
    rec("postgres/postgres", { homepage: "https://www.postgresql.org/", stars: 20_000 }),
    rec("someone/pg-tool", { homepage: "https://postgresql.org", stars: 50 }),
    rec("git/git", { stars: 60_000 }),
    rec("lua/lua", { stars: 400 }),
    rec("dolphin-emu/dolphin", { stars: 15_000 }),
    rec("vitejs/vite", { homepage: "https://vite.dev", stars: 80_000 }),
    rec("GNOME/gimp", { stars: 6_000 }),
    rec("someone/gimp", { stars: 30 }),
    rec("jooq/jool", { homepage: "https://www.jooq.org", stars: 2_000 }),
    rec("django/django", { homepage: "https://www.djangoproject.com/", stars: 80_000 }),
  ];

  it("joins by a GitHub homepage (or a former name), a shared homepage with the package's name, the owner's namesake, or a site named after the project", () => {
    const got = joinPackages(records, [
      pkg("fastapi", "github.com/tiangolo/fastapi", "web framework"),
      pkg("python-fastapi", "github.com/fastapi/fastapi-old", "the same, by its former name"),
      pkg("postgresql-15", "postgresql.org", "relational database"),
      pkg("git", "git-scm.com", "revision control system"),
      pkg("gimp", "gimp.org", "GNU Image Manipulation Program"),
      pkg("python-django", "djangoproject.com", "High-level Python web development framework"), // Debian's language prefix
    ]);
    assert.deepEqual(
      [...got].sort(),
      [
        ["git/git", "revision control system"],
        ["django/django", "High-level Python web development framework"],
        ["gnome/gimp", "GNU Image Manipulation Program"],
        ["postgres/postgres", "relational database"],
        ["tiangolo/fastapi", "web framework the same, by its former name"],
      ].sort(),
    );
  });

  it("does not join a namesake below 500 stars, another owner's repository of the name, a homepage under another name, an unknown GitHub repository, or a project with a site of its own", () => {
    const got = joinPackages(records, [
      pkg("lua5.4", null, "embeddable scripting language"), // lua/lua has 400 stars (its site's owner would join it: below)
      pkg("dolphin", "apps.kde.org/dolphin", "file manager"), // dolphin-emu/dolphin is not dolphin/dolphin
      pkg("libpqxx", "postgresql.org", "C++ client library"), // postgresql.org, but not named after postgres
      pkg("vite", null, "trace explorer"), // vitejs/vite is not vite/vite
      pkg("git", "github.com/nobody/git", "a fork"), // a GitHub homepage joins that repository or nothing
      pkg("jool", "jool.mx", "NAT64 translator"), // jooq/jool (here) names a site of its own
    ]);
    assert.equal(got.size, 0, JSON.stringify([...got]));
  });

  it("joins by the site's owner before the owner's namesake: the project named like the package, but for a version or Debian's language prefix, or named like the owner", () => {
    const owned = [
      rec("gruntjs/grunt"),
      rec("micro-editor/micro", { stars: 29_000 }),
      rec("micro/micro", { stars: 11_000 }), // "API first development platform": the namesake, not Debian's micro
      rec("elixir-lang/elixir", { stars: 26_000 }),
      rec("elixir-lang/elixir-lang.github.com", { stars: 400 }),
      rec("beyondgrep/ack2"),
      rec("gulpjs/gulp"),
      rec("apache/maven"),
      rec("apache/maven-surefire", { stars: 9_000 }),
      rec("lua/lua", { stars: 400 }), // the site's owner needs 100 stars, a namesake 500
    ];
    const got = joinPackages(owned, [
      pkg("grunt", "gruntjs.com", "JavaScript task runner"),
      pkg("micro", "micro-editor.github.io", "terminal-based text editor"),
      pkg("elixir-lang", "elixir-lang.org", "functional meta-programming aware language"),
      pkg("ack", "beyondgrep.com", "grep-like program"),
      pkg("node-gulp", "gulpjs.com", "streaming build system"),
      pkg("maven", "maven.apache.org", "Java software project management"),
      pkg("lua5.4", "lua.org", "embeddable scripting language"),
    ]);
    assert.deepEqual(
      [...got].sort(),
      [
        ["apache/maven", "Java software project management"],
        ["beyondgrep/ack2", "grep-like program"],
        ["elixir-lang/elixir", "functional meta-programming aware language"],
        ["gruntjs/grunt", "JavaScript task runner"],
        ["gulpjs/gulp", "streaming build system"],
        ["lua/lua", "embeddable scripting language"],
        ["micro-editor/micro", "terminal-based text editor"],
      ].sort(),
    );
  });

  it("does not join by the site's owner a plugin to its project, a project to its plugin, another project of the owner, or one under 100 stars", () => {
    const owned = [rec("mopidy/mopidy"), rec("pycqa/pylint-django"), rec("uhub/awesome-c"), rec("smalltool/smalltool", { stars: 99 })];
    const got = joinPackages(owned, [
      pkg("mopidy-alsamixer", "mopidy.com", "Mopidy extension for volume control"),
      pkg("pylint", "pylint.pycqa.org", "Python code static checker"),
      pkg("uhub", "uhub.org", "Direct Connect hub"),
      pkg("smalltool", "smalltool.github.io", "a small tool"),
    ]);
    assert.equal(got.size, 0, JSON.stringify([...got]));
  });

  it("joins a language-prefixed package by the site's owner only to a project written in that language (or of unknown language)", () => {
    const owned = [
      rec("mongodb/mongo", { language: "C++", stars: 28_000 }),
      rec("gulpjs/gulp", { language: "JavaScript" }),
      rec("necolas/normalize.css", { language: "CSS" }),
      rec("haml/haml", { language: null }),
      rec("igraph/igraph", { language: "C" }),
      rec("igraph/python-igraph", { language: "Python" }),
    ];
    const got = joinPackages(owned, [
      pkg("ruby-mongo", "mongodb.org", "Ruby driver for MongoDB"),
      pkg("node-gulp", "gulpjs.com", "streaming build system"),
      pkg("node-normalize.css", "necolas.github.io/normalize.css", "Normalize browsers' default style"),
      pkg("ruby-haml", "haml.info", "Elegant, structured XHTML/XML templating engine"),
      pkg("python-igraph", "igraph.org", "Python interface to the igraph library"),
    ]);
    assert.deepEqual(
      [...got].sort(),
      [
        ["gulpjs/gulp", "streaming build system"],
        ["haml/haml", "Elegant, structured XHTML/XML templating engine"],
        ["igraph/python-igraph", "Python interface to the igraph library"],
        ["necolas/normalize.css", "Normalize browsers' default style"],
      ].sort(),
    );
  });

  it("a GitHub homepage may be one of the repository's own pages, not a directory in it", () => {
    const got = joinPackages(
      [rec("tmux/tmux"), rec("kubernetes/kubernetes")],
      [
        pkg("tmux", "github.com/tmux/tmux/wiki", "terminal multiplexer"),
        pkg("golang-k8s-client-go", "github.com/kubernetes/kubernetes/tree/master/staging/src/k8s.io/client-go", "Go client"),
      ],
    );
    assert.deepEqual([...got], [["tmux/tmux", "terminal multiplexer"]]);
  });

  it("takes each package from the newest release that ships it", () => {
    const trixie = [pkg("tmux", "github.com/tmux/tmux/wiki", "terminal multiplexer (13)")];
    const bookworm = [pkg("tmux", "tmux.github.io", "terminal multiplexer (12)"), pkg("packer", "packer.io", "machine images (12 only)")];
    assert.deepEqual(newestFirst([trixie, bookworm]), [bookworm[1], trixie[0]]);
  });

  it("keeps a project's own package over its parts' packages, and the parts' when it has none", () => {
    const got = joinPackages(
      [rec("containers/podman"), rec("wez/wezterm")],
      [
        pkg("podman", "github.com/containers/podman", "tool to manage containers and pods"),
        pkg("libpod", "github.com/containers/podman", "library for running OCI-based containers in Pods"),
        pkg("rust-wezterm-bidi", "github.com/wez/wezterm", "Unicode Bidi Algorithm"),
      ],
    );
    assert.deepEqual([...got].sort(), [
      ["containers/podman", "tool to manage containers and pods"],
      ["wez/wezterm", "Unicode Bidi Algorithm"],
    ]);
  });

  it("does not depend on the order of records or packages", () => {
    const ps = [pkg("b-git", null, "second"), pkg("git", null, "first"), pkg("postgresql", "postgresql.org", "db")];
    const a = joinPackages(records, ps);
    const b = joinPackages([...records].reverse(), [...ps].reverse());
    assert.deepEqual([...a].sort(), [...b].sort());
    assert.equal(a.get("git/git"), "first");
  });

  it("prepareCorpus puts the joined text on the payload, and the lexical document indexes it with the anchor text", () => {
    const corpus = prepareCorpus(records, [pkg("git", null, "distributed revision control system")]);
    assert.equal(corpus.stats.packaged, 1);
    const p = toPayload(
      corpus.records.find((r) => r.key === "git/git")!,
      corpus.evidence.get("git/git")!,
      null,
      "h",
    );
    assert.equal(p.packaged, "distributed revision control system");
    assert.equal(lexicalDocOf(p).anchor, "distributed revision control system");
    assert.equal(lexicalDocOf({ ...p, anchor: "scm vcs" }).anchor, "scm vcs distributed revision control system");
    assert.equal(lexicalDocOf({ ...p, packaged: undefined }).anchor, null, "a payload written before the join has none");
  });

  it("a mirror notice or a missing description is followed by the package description in the description field; a description of its own is not", () => {
    const packaged = "SQLite is a C library that implements an SQL database engine";
    const doc = (description: string | null, withPackage = true) =>
      lexicalDocOf(toPayload(rec("sqlite/sqlite", { description }), { anchor: null, mentions: 0, packaged: withPackage ? packaged : null }, null, "h"));
    assert.equal(doc("Official Git mirror of the SQLite source tree").description, `Official Git mirror of the SQLite source tree ${packaged}`);
    assert.equal(
      doc("Read-only mirror of https://gitlab.gnome.org/GNOME/gimp").description,
      `Read-only mirror of https://gitlab.gnome.org/GNOME/gimp ${packaged}`,
    );
    assert.equal(doc("Git Source Code Mirror - This is a publish-only repository").description?.endsWith(packaged), true);
    assert.equal(doc(null).description, packaged);
    assert.equal(doc("").description, packaged);
    assert.equal(doc("Embedded SQL database engine").description, "Embedded SQL database engine");
    assert.equal(doc("Mirrors of package registries", false).description, "Mirrors of package registries", "no package, nothing to add");
    assert.equal(doc(null, false).description, null);
    // The anchor field keeps the package description either way.
    assert.equal(doc(null).anchor, packaged);
  });

  it("the shipped descriptions are sorted by source, one per source, each with text", () => {
    const shipped = shippedPackages();
    assert.ok(shipped.length > 1000, String(shipped.length));
    for (let i = 1; i < shipped.length; i++) assert.ok(shipped[i - 1]!.source < shipped[i]!.source, shipped[i]!.source);
    for (const p of shipped) assert.ok(p.text.length > 0 && p.text.length <= 400, p.source);
  });
});
