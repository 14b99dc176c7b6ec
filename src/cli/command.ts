/**
 * What a `reposearch` subcommand is. Defined apart from main.ts so that the command modules and the
 * dispatcher import it without importing each other.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type { ParseArgsConfig } from "node:util";
import { projectRoot, type Config } from "../config/config.js";

export const VERSION = (JSON.parse(readFileSync(path.join(projectRoot, "package.json"), "utf8")) as { version: string }).version;

export interface Command {
  readonly summary: string;
  readonly usage: string;
  readonly options: NonNullable<ParseArgsConfig["options"]>;
  readonly allowPositionals?: boolean;
  run(ctx: CommandContext): Promise<number>;
}

/** A bad flag value or argument: main prints the message and the command's usage and exits 2, as for an unknown flag. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export interface CommandContext {
  readonly config: Config;
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: string[];
}
