/**
 * Who is calling: an API key becomes an active principal allowed to search, or the contract's error
 * (401 AUTH_ERROR for a missing, over-long or unknown key; 403 FORBIDDEN for a suspended account or a
 * key without the search scope; 502 when the accounts database cannot answer). Every refusal is counted
 * by reason. The key itself is handed to `remember` once it is known to be of a plausible length, so the
 * caller can scrub it from anything it logs.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { SCOPE_SEARCH, type AccountStore, type Principal } from "./accounts/types.js";
import type { AuthFailureReason } from "./metrics.js";

/** Longer X-API-Key values are rejected without a database round trip. */
const MAX_API_KEY_LENGTH = 512;
const INVALID_KEY_MESSAGE = "invalid API key";

export async function authenticate(
  apiKey: string | undefined,
  accounts: Pick<AccountStore, "authenticate">,
  onFailure: (reason: AuthFailureReason) => void,
  remember: (apiKey: string) => void,
): Promise<Principal> {
  const fail = (reason: AuthFailureReason, code: ErrorCode, message: string): ReposearchError => {
    onFailure(reason);
    return new ReposearchError(code, message);
  };
  if (apiKey === undefined || apiKey.trim() === "") throw fail("missing", ErrorCode.AuthError, "missing API key: send it in the X-API-Key header");
  if (apiKey.length > MAX_API_KEY_LENGTH) throw fail("invalid", ErrorCode.AuthError, INVALID_KEY_MESSAGE);
  remember(apiKey);
  let principal: Principal | null;
  try {
    principal = await accounts.authenticate(apiKey);
  } catch (err) {
    throw new ReposearchError(ErrorCode.ExternalService, "accounts database unavailable; retry later", { cause: err });
  }
  if (!principal) throw fail("invalid", ErrorCode.AuthError, INVALID_KEY_MESSAGE);
  if (principal.accountStatus !== "active") throw fail("forbidden", ErrorCode.Forbidden, "account is suspended");
  if (!principal.scopes.includes(SCOPE_SEARCH)) throw fail("forbidden", ErrorCode.Forbidden, `this API key lacks the "${SCOPE_SEARCH}" scope`);
  return principal;
}
