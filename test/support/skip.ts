/** Skipping a test whose tool or server is missing, saying why in the run's output. */
import type { TestContext } from "vitest";

/** Logs the reason and skips the running test (ctx.skip throws, so nothing after it runs). */
export function skipTest(ctx: TestContext, reason: string): never {
  console.log(`skipped "${ctx.task.name}": ${reason}`);
  return ctx.skip(reason);
}

/** For `describe.skipIf` / `test.skipIf` decided at collection: logs the reason when there is one. */
export function skipReason(reason: string | false | null | undefined, what: string): boolean {
  if (reason) console.log(`skipped ${what}: ${reason}`);
  return Boolean(reason);
}
