/**
 * Every error a client can see, Part A and Part B, in one table.
 *
 * The key is the catalog name used in code; `message` is what goes on the wire. Part A and Part B share some
 * messages (AUTHORIZATION_FAIL) with different codes, so the key, not the message, identifies an entry.
 * `docs/errors.md` is generated from this table (test/enrollment/docs.test.ts fails when it is stale), and
 * test/http/partA.errors.test.ts and test/enrollment/errors.test.ts check that requests reach the Part A and Part B
 * codes over HTTP (each lists the few entries it leaves out).
 */
export interface CatalogEntry {
  readonly key: string;
  readonly status: number;
  readonly code: string;
  readonly message: string;
  /** A: attestation API, B: enrollment API, AB: both, P: the portal's admin API (docs/portal.md) */
  readonly part: "A" | "B" | "AB" | "P";
  readonly meaning: string;
}

function entry(part: CatalogEntry["part"], status: number, code: string, message: string, meaning: string) {
  return { part, status, code, message, meaning } as const;
}

const table = {
  // ---- Part A (attestation-api.md) ----
  INVALID_REQUEST: entry("A", 400, "4000000", "INVALID_REQUEST", "Request body or parameters invalid"),
  NONCE_REQUIRED: entry("A", 400, "4000001", "NONCE_REQUIRED", "The nonce query parameter is missing"),
  NONCE_INVALID: entry("A", 400, "4000002", "NONCE_INVALID", "Nonce unknown, malformed or another tenant's"),
  NONCE_EXPIRED: entry("A", 400, "4000003", "NONCE_EXPIRED", "Nonce older than the nonce TTL"),
  NONCE_ALREADY_USED: entry("A", 400, "4000004", "NONCE_ALREADY_USED", "Nonce already consumed by a blob"),
  BLOB_EMPTY: entry("A", 400, "4000005", "BLOB_EMPTY", "The request body is empty"),
  BLOB_MALFORMED: entry("A", 400, "4000006", "BLOB_MALFORMED", "The blob container cannot be read"),
  A_AUTHORIZATION_FAIL: entry("A", 401, "4010000", "AUTHORIZATION_FAIL", "API key missing or invalid"),
  A_FORBIDDEN: entry("A", 403, "4030000", "AUTHORIZATION_FAIL", "Tenant not active, restriction refused, or not yours"),
  A_NOT_FOUND: entry("A", 404, "4040000", "RESOURCE_NOT_FOUND", "Path or record does not exist"),
  METHOD_NOT_ALLOWED: entry("A", 405, "4050000", "METHOD_NOT_ALLOWED", "Only POST is allowed"),
  NOT_ACCEPTABLE: entry("A", 406, "4060000", "NOT_ACCEPTABLE", "Accept names no media type the server produces"),
  UNSUPPORTED_MEDIA_TYPE: entry("A", 415, "4150000", "UNSUPPORTED_MEDIA_TYPE", "Content-Type is not application/octet-stream"),
  BLOB_TOO_LARGE: entry("A", 422, "4220001", "BLOB_TOO_LARGE", "Body larger than maxBlobBytes"),
  BATCH_TOO_LARGE: entry("A", 422, "4220002", "BATCH_TOO_LARGE", "More batch items than maxBatch"),
  NONCE_LIMIT_EXCEEDED: entry("A", 422, "4220003", "NONCE_LIMIT_EXCEEDED", "Too many outstanding nonces for the tenant"),
  NOT_IMPLEMENTED: entry("A", 501, "5010000", "NOT_IMPLEMENTED", "Recognised but unsupported container version"),

  // ---- shared by both parts: same status, code and message ----
  REQUEST_TIMEOUT: entry("AB", 408, "4080000", "REQUEST_TIMEOUT", "The request did not arrive within --request-timeout-ms (or its headers within --headers-timeout-ms); the connection is closed"),
  HEADERS_TOO_LARGE: entry("AB", 431, "4310000", "REQUEST_HEADER_FIELDS_TOO_LARGE", "The request headers exceed 16 KiB; the connection is closed"),
  TOO_MANY_REQUESTS: entry("AB", 429, "4290000", "TOO_MANY_REQUESTS", "Rate limit exceeded; see Retry-After"),
  INTERNAL_SERVER_ERROR: entry("AB", 500, "5000000", "INTERNAL_SERVER_ERROR", "Unexpected failure; the reason names an error id"),
  SERVICE_UNAVAILABLE: entry("AB", 503, "5030000", "SERVICE_UNAVAILABLE", "A backing store is unreachable; retry later"),

  // ---- Part B (enrollment-api.md, seed table) ----
  RESOURCE_INVALID_PARAM: entry("B", 400, "4000000", "RESOURCE_INVALID_PARAM", "Request parameters not valid"),
  TOO_MANY_DEVICES: entry("B", 400, "4000019", "TOO_MANY_DEVICES", "Device list exceeds the maximum count"),
  TENANT_MISMATCH: entry("B", 400, "4000904", "TENANT_MISMATCH", "Customer ID does not match the current tenant"),
  SEG_PROFILE_INVALID: entry("B", 400, "4001600", "SEG_PROFILE_INVALID", "Profile request invalid"),
  BULK_ENROLL_PROFILE_INVALID: entry("B", 400, "4001700", "BULK_ENROLL_PROFILE_INVALID", "Profile request invalid"),
  CUSTOMER_ID_INVALID: entry("B", 400, "4001701", "CUSTOMER_ID_INVALID", "Customer ID invalid"),
  BULK_ENROLL_REQUEST_INVALID: entry("B", 400, "4001701", "BULK_ENROLL_REQUEST_INVALID", "Request invalid"),
  BULK_ENROLL_DEVICE_INVALID: entry("B", 400, "4001703", "BULK_ENROLL_DEVICE_INVALID", "Requested device invalid"),
  BAD_REQUEST_CLIENTIDENTIFIER_CLAIM_NOT_POPULATED: entry("B", 400, "4002251", "BAD_REQUEST_CLIENTIDENTIFIER_CLAIM_NOT_POPULATED", "Null or empty clientIdentifier claim"),
  B_AUTHORIZATION_FAIL: entry("B", 401, "4010000", "AUTHORIZATION_FAIL", "Authentication required but missing"),
  ACCESS_TOKEN_BAD_REQUEST: entry("B", 401, "4010050", "ACCESS_TOKEN_BAD_REQUEST", "Access-token request invalid"),
  BAD_REQUEST_ACCESS_TOKEN_CLAIM_NOT_POPULATED: entry("B", 401, "4012251", "BAD_REQUEST_ACCESS_TOKEN_CLAIM_NOT_POPULATED", "Null or empty accessToken claim"),
  B_FORBIDDEN: entry("B", 403, "40300000", "AUTHORIZATION_FAIL", "Authenticated but lacks permission, or resource cannot be found"),
  TENANT_BLOCKED: entry("B", 403, "4030003", "TENANT_BLOCKED", "Tenant blocked from the service"),
  RESELLER_BLOCKED: entry("B", 403, "4030004", "RESELLER_BLOCKED", "Reseller accounts cannot use the enrollment APIs by default"),
  TENANT_INACTIVE: entry("B", 403, "4030005", "TENANT_INACTIVE", "Tenant inactive"),
  USER_AUTHENTICATION_FAIL: entry("B", 403, "4030100", "USER_AUTHENTICATION_FAIL", "User not registered in the service"),
  RESOURCE_NOT_FOUND: entry("B", 404, "4040000", "RESOURCE_NOT_FOUND", "Resource does not exist"),
  USER_NOT_FOUND: entry("B", 404, "4040100", "USER_NOT_FOUND", "User does not exist"),
  DEVICE_NOT_FOUND: entry("B", 404, "4040300", "DEVICE_NOT_FOUND", "Device does not exist"),
  PROFILE_NOT_FOUND: entry("B", 404, "4040400", "PROFILE_NOT_FOUND", "Profile does not exist"),
  TENANT_NOT_FOUND: entry("B", 404, "4040900", "TENANT_NOT_FOUND", "Tenant does not exist"),
  SEG_PROFILE_NOT_FOUND: entry("B", 404, "4041600", "SEG_PROFILE_NOT_FOUND", "Profile does not exist"),
  BULK_ENROLL_PROFILE_NOT_FOUND: entry("B", 404, "4041700", "BULK_ENROLL_PROFILE_NOT_FOUND", "Profile does not exist"),
  BULK_ENROLL_CONFIGURATION_DEVICE_NOT_FOUND: entry("B", 404, "4041701", "BULK_ENROLL_CONFIGURATION_DEVICE_NOT_FOUND", "Devices to configure do not exist"),
  RESELLER_NOT_FOUND: entry("B", 404, "4042100", "RESELLER_NOT_FOUND", "Reseller does not exist"),
  API_KEY_RESTRICTION_INVALID: entry("B", 404, "4042251", "API_KEY_RESTRICTION_INVALID", "IP address or HTTP referer format incorrect or empty"),
  SEG_PROFILE_ALREADY_EXISTS: entry("B", 409, "4091600", "SEG_PROFILE_ALREADY_EXISTS", "Profile already exists"),
  BULK_ENROLL_PROFILE_NAME_CONFLICT: entry("B", 409, "4091700", "BULK_ENROLL_PROFILE_NAME_CONFLICT", "A profile with the same name exists"),
  RESELLER_ASSOCIATION_ALREADY_EXISTS: entry("B", 409, "4092103", "RESELLER_ASSOCIATION_ALREADY_EXISTS", "Reseller already associated with the current tenant"),
  // ---- the portal's admin API (docs/portal.md); Part B's error body ----
  PORTAL_INVALID_REQUEST: entry("P", 400, "4008000", "PORTAL_INVALID_REQUEST", "Request body or parameters invalid"),
  PORTAL_WEAK_PASSWORD: entry("P", 400, "4008001", "PORTAL_WEAK_PASSWORD", "Password too short, too long, only whitespace, too common or the email itself"),
  PORTAL_WRONG_HOST: entry("P", 400, "4008002", "PORTAL_WRONG_HOST", "Passkeys belong to the public URL (--public-url); this page was reached at another address"),
  PORTAL_PASSKEY_REJECTED: entry("P", 400, "4008003", "PORTAL_PASSKEY_REJECTED", "A new passkey did not verify: its ceremony expired or was used, or origin, RP ID or user verification is wrong"),
  PORTAL_POLICY_INVALID: entry("P", 400, "4008026", "PORTAL_POLICY_INVALID", "The policy document is not valid: each faulty field is named by its path (docs/policy.md)"),
  PORTAL_SIGNIN_FAILED: entry("P", 401, "4018000", "PORTAL_SIGNIN_FAILED", "Email or password incorrect (the same answer for an unknown email)"),
  PORTAL_SIGNED_OUT: entry("P", 401, "4018001", "PORTAL_SIGNED_OUT", "No session, or it ended, expired or was idle too long"),
  PORTAL_PASSKEY_SIGNIN_FAILED: entry("P", 401, "4018002", "PORTAL_PASSKEY_SIGNIN_FAILED", "Passkey unknown, signature invalid, its user not active, or the sign-in ceremony expired (one answer for all)"),
  PORTAL_PASSKEY_CLONED: entry("P", 401, "4018003", "PORTAL_PASSKEY_CLONED", "The passkey's signature counter did not move forward: a copy of it may be in use"),
  PORTAL_FORBIDDEN: entry("P", 403, "4038000", "PORTAL_FORBIDDEN", "The role does not allow this"),
  PORTAL_CSRF: entry("P", 403, "4038001", "PORTAL_CSRF", "Missing or wrong CSRF token (or a foreign Origin); nothing changed"),
  PORTAL_NOT_FOUND: entry("P", 404, "4048000", "PORTAL_NOT_FOUND", "No such record for this tenant"),
  PORTAL_EMAIL_TAKEN: entry("P", 409, "4098000", "PORTAL_EMAIL_TAKEN", "Another portal user has this email"),
  PORTAL_PASSKEY_EXISTS: entry("P", 409, "4098001", "PORTAL_PASSKEY_EXISTS", "This passkey is registered already"),
  PORTAL_PLAY_APP_EXISTS: entry("P", 409, "4098002", "PORTAL_PLAY_APP_EXISTS", "The tenant has registered this Play package already"),
  PORTAL_IOS_APP_EXISTS: entry("P", 409, "4098003", "PORTAL_IOS_APP_EXISTS", "The tenant has registered this iOS app id already"),
  PORTAL_TENANT_EXISTS: entry("P", 409, "4098050", "PORTAL_TENANT_EXISTS", "A tenant with this name or customer ID exists"),
  PORTAL_INVITE_INVALID: entry("P", 410, "4108000", "PORTAL_INVITE_INVALID", "The sign-in link is unknown, used, expired, or void (a newer link, a password set or a disable voids it)"),
  // single sign-on (docs/sso.md)
  PORTAL_SSO_FAILED: entry("P", 401, "4018010", "PORTAL_SSO_FAILED", "Single sign-on did not complete: the sign-in expired or came from another browser (state), or the provider's answer or ID token did not validate"),
  PORTAL_SSO_REFUSED: entry("P", 403, "4038010", "PORTAL_SSO_REFUSED", "The provider signed the person in, but attestd maps them to no tenant and role, or their portal account is disabled or another tenant's"),
  PORTAL_SSO_UNAVAILABLE: entry("P", 503, "5038010", "PORTAL_SSO_UNAVAILABLE", "The identity provider could not be reached or its discovery document is unusable"),
  RSA_DECRYPTION_FAIL: entry("B", 500, "5000006", "RSA_DECRYPTION_FAIL", "Text could not be decrypted"),
  PORTAL_WEBHOOK_URL_REFUSED: entry("P", 400, "4008027", "PORTAL_WEBHOOK_URL_REFUSED", "The webhook URL is not a target the operator allows: https only, no loopback, private, link-local or metadata address (--webhook-allow-private, --webhook-allow-hosts)"),
} as const;

export type CatalogKey = keyof typeof table;

export const catalog: { readonly [K in CatalogKey]: CatalogEntry } = Object.fromEntries(
  Object.entries(table).map(([key, value]) => [key, Object.freeze({ key, ...value })]),
) as { readonly [K in CatalogKey]: CatalogEntry };

export const catalogEntries: readonly CatalogEntry[] = Object.values(catalog);

/** Which catalog parts answer a request to `route` (a route pattern or a path), for reading a logged code back. */
export function partsOfRoute(route: string): readonly CatalogEntry["part"][] {
  // what no route matched (or node:http refused) is logged as "unmatched": its part is not known
  if (route === "unmatched") return ["A", "B", "AB", "P"];
  if (route === "/svc" || route.startsWith("/svc/")) return ["B", "AB"];
  // the portal answers in Part B's body; an unknown /portal path is Part B's RESOURCE_NOT_FOUND
  if (route === "/portal" || route.startsWith("/portal/")) return ["P", "B", "AB"];
  return ["A", "AB"];
}

/**
 * The catalog entries a logged `code` may be, given the route that answered it: one, or (a code two entries of a
 * part share, e.g. Part B's 4001701) each of them, so a page can show the message beside the code. Empty for a
 * code the catalog no longer has.
 */
export function entriesForCode(code: string, route: string): CatalogEntry[] {
  const parts = partsOfRoute(route);
  return catalogEntries.filter((e) => e.code === code && parts.includes(e.part));
}
