/** The admin commands through the real CLI process, on a SQLite ledger in a temp DATA_DIR (and once on Postgres). */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, onTestFinished, test } from "vitest";
import pg from "pg";
import { parseKey } from "../src/gateway/accounts/keys.js";
import { runCli, tempDir, type CliResult } from "./helpers.js";

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, LOG_LEVEL: "warn", LEDGER_BACKEND: "sqlite", LEDGER_SQLITE_PATH: "", ...extra };
}

function ok(r: CliResult): CliResult {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
}

describe("admin CLI on SQLite", () => {
  let dir: string;
  let e: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => runCli(args, e);

  beforeAll(async () => {
    dir = await tempDir("admin-cli");
    e = env({ DATA_DIR: dir });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test("accounts, keys, credits: the happy path", async () => {
    const created = JSON.parse(ok(await cli("accounts", "create", "acme")).stdout) as Record<string, unknown>;
    assert.equal(created.name, "acme");
    assert.equal(created.status, "active");
    assert.equal(created.balanceMicros, 0);

    const k = ok(await cli("keys", "create", "--account", "acme", "--credits-usd", "12.345678"));
    const lines = k.stdout.split("\n");
    const key = lines[0]!;
    const parsed = parseKey(key);
    assert.ok(parsed, `first line is a key: ${JSON.stringify(key)}`);
    assert.match(key, /^rsk_[0-9A-Za-z]{8}_[0-9A-Za-z]{38}$/);
    assert.match(k.stdout, /shown once/);
    assert.ok(lines.slice(1).some((l) => l.includes(parsed.prefix)));
    assert.match(k.stdout, /balance\s+12\.345678 USD \(12345678 micros\)/);
    assert.ok(!k.stderr.includes(key), "the key goes to stdout only");

    assert.match(ok(await cli("credits", "topup", "--account", "acme", "--usd", "5")).stdout, /balance\s+17\.345678 USD \(17345678 micros\)/);
    assert.match(ok(await cli("credits", "balance", "--account", "acme")).stdout, /17\.345678 USD \(17345678 micros\)/);

    assert.equal(JSON.parse(ok(await cli("accounts", "suspend", "acme")).stdout).status, "suspended");
    assert.equal(JSON.parse(ok(await cli("accounts", "activate", "acme")).stdout).status, "active");

    assert.match(ok(await cli("keys", "revoke", parsed.prefix)).stdout, new RegExp(`revoked\\s+${parsed.prefix}`));
    const again = await cli("keys", "revoke", parsed.prefix);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no active key/);
  });

  test("bad amounts, unknown accounts and missing arguments exit non-zero with a message", async () => {
    ok(await cli("accounts", "create", "bob"));
    const cases: [string[], RegExp][] = [
      [["credits", "topup", "--account", "bob", "--usd", "4.99"], /between 5 and 1000 USD/],
      [["credits", "topup", "--account", "bob", "--usd", "1000.01"], /between 5 and 1000 USD/],
      [["credits", "topup", "--account", "bob", "--usd", "10.1234567"], /6 decimal places/],
      [["credits", "topup", "--account", "bob", "--usd", "ten"], /invalid USD amount/],
      [["credits", "topup", "--account", "bob"], /--usd is required/],
      [["keys", "create", "--account", "bob", "--credits-usd", "2"], /between 5 and 1000 USD/],
      [["keys", "create", "--account", "nobody"], /not found/],
      [["credits", "balance", "--account", "nobody"], /not found/],
      [["accounts", "create", "bob"], /already exists/],
      [["keys", "revoke", "nonsense"], /not a key prefix/],
    ];
    // One at a time: each run is a whole CLI process, and the machine is small.
    for (const [args, message] of cases) {
      const r = await cli(...args);
      assert.notEqual(r.code, 0, `${args.join(" ")} should fail`);
      assert.match(r.stderr, message, args.join(" "));
    }
    // Nothing was charged, credited or created by the failures.
    assert.match(ok(await cli("credits", "balance", "--account", "bob")).stdout, /0\.000000 USD \(0 micros\)/);
    const usage = await cli("credits");
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: reposearch credits/);
  });
});

test("admin CLI on Postgres (LEDGER_BACKEND=postgres)", async () => {
  const base = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
  const schema = `ledger_cli_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  onTestFinished(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  const url = `${base}${base.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const e = { ...env({}), LEDGER_BACKEND: "postgres", DATABASE_URL: url };
  ok(await runCli(["accounts", "create", "pg-acme"], e));
  const key = ok(await runCli(["keys", "create", "--account", "pg-acme", "--credits-usd", "5"], e)).stdout.split("\n")[0]!;
  assert.ok(parseKey(key));
  assert.match(ok(await runCli(["credits", "balance", "--account", "pg-acme"], e)).stdout, /5\.000000 USD \(5000000 micros\)/);
  const rows = await admin.query(`SELECT kind, amount_micros FROM ${schema}.ledger`);
  assert.deepEqual(rows.rows, [{ kind: "topup", amount_micros: "5000000" }]);
});
