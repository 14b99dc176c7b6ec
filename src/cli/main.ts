/**
 * The `reposearch` command. Each subcommand parses its own flags (node:util parseArgs, strict), builds
 * the configuration once (flags override environment variables) and returns a process exit code.
 */
import { parseArgs } from "node:util";
import { ConfigError, ReposearchError } from "../common/errors.js";
import { logger, setLogLevel } from "../common/logger.js";
import { loadConfig, type ConfigOverrides } from "../config/config.js";
import { UsageError, VERSION, type CommandContext } from "./command.js";
import { commands } from "./commands.js";

export { VERSION, type Command, type CommandContext } from "./command.js";

/** Flags shared by every command, mapped onto configuration variables. */
export const commonOptions = {
  "data-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

function usage(): string {
  const lines = [`reposearch ${VERSION}: semantic search over public source-code repositories`, "", "Commands:"];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(10)} ${c.summary}`);
  lines.push("", "Run `reposearch <command> --help` for a command's flags. Configuration: see docs/configuration.md.");
  return lines.join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help" || name === "-h") {
    console.log(usage());
    return name ? 0 : 2;
  }
  if (name === "--version" || name === "-v") {
    console.log(VERSION);
    return 0;
  }
  const cmd = commands[name];
  if (!cmd) {
    console.error(`unknown command: ${name}\n\n${usage()}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...commonOptions, ...cmd.options }, allowPositionals: cmd.allowPositionals ?? false, strict: true });
  } catch (e) {
    console.error(`${(e as Error).message}\n\nusage: ${cmd.usage}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(`usage: ${cmd.usage}\n\n${cmd.summary}`);
    return 0;
  }
  try {
    const overrides: ConfigOverrides = {};
    if (typeof parsed.values["data-dir"] === "string") overrides.DATA_DIR = parsed.values["data-dir"];
    const values = parsed.values as Record<string, string | boolean | undefined>;
    if (typeof values.dataset === "string") overrides.DATASET = values.dataset;
    const config = loadConfig(process.env, overrides);
    setLogLevel(config.logLevel);
    return await cmd.run({ config, values: parsed.values as CommandContext["values"], positionals: parsed.positionals });
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`reposearch ${name}: ${e.message}\n\nusage: ${cmd.usage}`);
      return 2;
    }
    if (e instanceof ConfigError || e instanceof ReposearchError) {
      console.error(`reposearch ${name}: ${e.message}`);
      return e instanceof ConfigError ? 2 : 1;
    }
    logger.error("command failed", { command: name, err: e });
    return 1;
  }
}
