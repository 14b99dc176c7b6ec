/**
 * Operator commands for accounts, API keys and credits. They talk to the configured ledger
 * (LEDGER_BACKEND: the SQLite file under DATA_DIR, or Postgres at DATABASE_URL) directly, so they
 * work with the service stopped and need database access rather than an admin API.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { Config } from "../config/config.js";
import { openAccountStore } from "../gateway/accounts/index.js";
import { KEY_PREFIX_RE, parseKey, redactKeys } from "../gateway/accounts/keys.js";
import type { Account, AccountStore } from "../gateway/accounts/types.js";
import { formatUsd, parseUsdToMicros, validateTopupMicros } from "../gateway/accounts/validation.js";
import type { Command, CommandContext } from "./command.js";

async function withStore<T>(config: Config, fn: (store: AccountStore) => Promise<T>): Promise<T> {
  const store = await openAccountStore(config);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A subcommand dispatcher: unknown or missing subcommands print usage and exit 2, like a bad flag. */
function dispatch(usage: string, subs: Record<string, (ctx: CommandContext, args: string[]) => Promise<number>>) {
  return async (ctx: CommandContext): Promise<number> => {
    const [sub, ...args] = ctx.positionals;
    const handler = sub === undefined ? undefined : subs[sub];
    if (!handler) {
      console.error(`${sub === undefined ? "a subcommand is required" : `unknown subcommand: ${redactKeys(sub)}`}\n\nusage: ${usage}`);
      return 2;
    }
    return handler(ctx, args);
  };
}

function requireOne(args: string[], what: string): string {
  if (args.length !== 1 || !args[0]) throw new ReposearchError(ErrorCode.ValidationError, `expected exactly one ${what} (got ${args.length})`);
  return args[0];
}

function requireFlag(values: CommandContext["values"], flag: string): string {
  const v = values[flag];
  if (typeof v !== "string" || v.trim() === "") throw new ReposearchError(ErrorCode.ValidationError, `--${flag} is required`);
  return v.trim();
}

function noArgs(args: string[]): void {
  if (args.length > 0) throw new ReposearchError(ErrorCode.ValidationError, `unexpected argument: ${redactKeys(args[0]!)}`);
}

/** USD text → micros within the top-up range ($5..$1000), exact to the micro-dollar. */
function topupMicros(flag: string, text: string): number {
  try {
    return validateTopupMicros(parseUsdToMicros(text));
  } catch (e) {
    if (e instanceof ReposearchError) throw new ReposearchError(e.code, `--${flag}: ${e.message}`, { cause: e });
    throw e;
  }
}

const money = (micros: number) => `${formatUsd(micros)} USD (${micros} micros)`;

function printAccount(a: Account, balanceMicros: number): void {
  console.log(
    JSON.stringify({ id: a.id, name: a.name, status: a.status, createdAt: a.createdAt, balanceMicros, balanceUsd: formatUsd(balanceMicros) }, null, 2),
  );
}

const ACCOUNTS_USAGE = "reposearch accounts create|suspend|activate NAME [--data-dir DIR]";
const KEYS_USAGE = "reposearch keys create --account NAME [--credits-usd N] [--scopes search] | reposearch keys revoke KEY_PREFIX  [--data-dir DIR]";
const CREDITS_USAGE = "reposearch credits topup --account NAME --usd N | reposearch credits balance --account NAME  [--data-dir DIR]";

export const adminCommands: Record<string, Command> = {
  accounts: {
    summary: "create, suspend or activate an account",
    usage: ACCOUNTS_USAGE,
    options: {},
    allowPositionals: true,
    run: dispatch(ACCOUNTS_USAGE, {
      create: async ({ config }, args) => {
        const name = requireOne(args, "account name");
        return withStore(config, async (store) => {
          printAccount(await store.createAccount(name), 0);
          return 0;
        });
      },
      suspend: async ({ config }, args) => {
        const name = requireOne(args, "account name");
        return withStore(config, async (store) => {
          printAccount(await store.setAccountStatus(name, "suspended"), await store.balance(name));
          return 0;
        });
      },
      activate: async ({ config }, args) => {
        const name = requireOne(args, "account name");
        return withStore(config, async (store) => {
          printAccount(await store.setAccountStatus(name, "active"), await store.balance(name));
          return 0;
        });
      },
    }),
  },
  keys: {
    summary: "create an API key (printed once) or revoke one by its prefix",
    usage: KEYS_USAGE,
    options: { account: { type: "string" }, "credits-usd": { type: "string" }, scopes: { type: "string" } },
    allowPositionals: true,
    run: dispatch(KEYS_USAGE, {
      create: async ({ config, values }, args) => {
        noArgs(args);
        const account = requireFlag(values, "account");
        // Validate everything before creating anything, so a bad amount leaves no orphan key.
        const credits = typeof values["credits-usd"] === "string" ? topupMicros("credits-usd", values["credits-usd"]) : undefined;
        const scopes = typeof values.scopes === "string" ? values.scopes.split(",").map((s) => s.trim()) : undefined;
        return withStore(config, async (store) => {
          const created = await store.createKey(account, scopes ? { scopes } : {});
          // The key alone on the first line, so scripts can take it with `head -n1`.
          console.log(created.key);
          console.log("This key is shown once and cannot be recovered (only its hash is stored). Keep it secret.");
          console.log(`prefix   ${created.prefix}  (use it to revoke: reposearch keys revoke ${created.prefix})`);
          console.log(`account  ${created.accountName}`);
          console.log(`scopes   ${created.scopes.join(",")}`);
          if (credits !== undefined) {
            const balance = await store.topup(account, credits, { reference: `keys create ${created.prefix}` });
            console.log(`credits  +${formatUsd(credits)} USD`);
            console.log(`balance  ${money(balance)}`);
          }
          return 0;
        });
      },
      revoke: async ({ config }, args) => {
        const given = requireOne(args, "key prefix");
        // A full key is accepted too; only its prefix is used or echoed.
        const prefix = parseKey(given)?.prefix ?? given;
        if (!KEY_PREFIX_RE.test(prefix)) {
          throw new ReposearchError(
            ErrorCode.ValidationError,
            `not a key prefix: ${JSON.stringify(redactKeys(prefix))} (expected rsk_ and 8 letters or digits)`,
          );
        }
        return withStore(config, async (store) => {
          const n = await store.revokeKey(prefix);
          if (n === 0) throw new ReposearchError(ErrorCode.NotFound, `no active key with prefix ${prefix}`);
          console.log(`revoked  ${prefix}`);
          return 0;
        });
      },
    }),
  },
  credits: {
    summary: "top up an account's credits ($5 to $1000) or show its balance",
    usage: CREDITS_USAGE,
    options: { account: { type: "string" }, usd: { type: "string" } },
    allowPositionals: true,
    run: dispatch(CREDITS_USAGE, {
      topup: async ({ config, values }, args) => {
        noArgs(args);
        const account = requireFlag(values, "account");
        const micros = topupMicros("usd", requireFlag(values, "usd"));
        return withStore(config, async (store) => {
          const balance = await store.topup(account, micros, { reference: "cli topup" });
          console.log(`topped up  ${formatUsd(micros)} USD`);
          console.log(`balance    ${money(balance)}`);
          return 0;
        });
      },
      balance: async ({ config, values }, args) => {
        noArgs(args);
        const account = requireFlag(values, "account");
        return withStore(config, async (store) => {
          console.log(`balance  ${money(await store.balance(account))}`);
          return 0;
        });
      },
    }),
  },
};
