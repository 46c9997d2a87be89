import { createPublicKey, timingSafeEqual, type KeyObject } from "node:crypto";
import { decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { restrictionRefusal, type Caller } from "../auth/restrictions.ts";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { ApiClient, EnrollmentUser } from "../domain/enrollment.ts";
import type { EnrollmentStore, JtiStore, TenantStore } from "../store/types.ts";
import type { Tenant } from "../domain/tenants.ts";
import { ALGORITHM } from "./clientJwt.ts";
import { ACCESS_TOKEN_PREFIX, CLIENT_ID_PREFIX, newSecretToken, parseSecretToken, secretMatches, UNKNOWN_SECRET_HASH } from "./ids.ts";

/**
 * Why a tenant's clients are refused whatever their credentials (blocked, inactive, a reseller not enabled for
 * enrollment), or undefined. The portal shows the same sentence on the tenant's clients page.
 */
export function tenantRefusal(tenant: Tenant): AppError | undefined {
  if (tenant.state === "blocked") return new AppError(catalog.TENANT_BLOCKED, "The tenant is blocked");
  if (tenant.state === "inactive") return new AppError(catalog.TENANT_INACTIVE, "The tenant is inactive");
  if (tenant.kind === "reseller" && !tenant.enrollmentEnabled) {
    return new AppError(catalog.RESELLER_BLOCKED, "Reseller accounts need the operator to enable enrollment");
  }
  return undefined;
}

export interface PartBPrincipal {
  tenant: Tenant;
  client: ApiClient;
  user: EnrollmentUser;
}

/** Where the caller's identity is written as soon as it is known, so even a refused request is attributed. */
export interface Attribution {
  tenantId?: string | undefined;
  clientId?: string | undefined;
}

export const MIN_VALIDITY_MINUTES = 1;
export const MAX_VALIDITY_MINUTES = 30;
/** an x-vendor-apitoken is good for this long after its iat (and its jti is remembered that long) */
export const API_TOKEN_MAX_AGE_SEC = 300;
/** an access-token request JWT may not live longer than this (bounds how long its jti must be remembered) */
export const TOKEN_REQUEST_MAX_LIFETIME_SEC = 3600;
export const CLOCK_TOLERANCE_SEC = 60;
export const MAX_JWT_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;

const bad = (reason: string) => new AppError(catalog.ACCESS_TOKEN_BAD_REQUEST, reason);

/**
 * One answer per flow for every identity failure, whichever part is wrong: an unknown or forged client identifier or
 * access token, another key, a signature by another key. So a stolen identifier (or token) cannot be tested with a
 * key of one's own; the real reason goes to the activity log only (AppError.privateReason). Only a caller whose
 * JWT verifies with the client's key learns more (expired, audience, jti reused).
 */
const UNRECOGNISED_CLIENT = "Client identifier or key not recognised";
const UNRECOGNISED_TOKEN = "The access token is unknown or expired, or the JWT is not signed with its client's key";
type Unrecognised = typeof UNRECOGNISED_CLIENT | typeof UNRECOGNISED_TOKEN;
const unrecognised = (answer: Unrecognised, realReason: string) =>
  new AppError(catalog.ACCESS_TOKEN_BAD_REQUEST, answer, {}, realReason);

function decodeB64(s: string): Buffer | undefined {
  return /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 ? Buffer.from(s, "base64") : undefined;
}

function sameKey(presentedB64: unknown, storedB64: string): boolean {
  if (typeof presentedB64 !== "string") return false;
  const a = decodeB64(presentedB64);
  const b = Buffer.from(storedB64, "base64");
  return a !== undefined && a.length === b.length && timingSafeEqual(a, b);
}

function claimEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === "";
}

/**
 * jose checks the algorithm and the signature before the claims, so a claim failure means the caller holds the
 * client's key and may be told which claim; anything earlier answers as an unknown credential would.
 */
function verifyFailure(e: unknown, audiences: readonly string[], answer: Unrecognised, clientId: string): AppError {
  if (e instanceof joseErrors.JWTExpired) return bad("The JWT has expired");
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    if (e.claim === "aud") return bad(`The JWT audience must be ${audiences.join(" or ")}`);
    if (e.claim === "iat" && e.reason === "check_failed") return bad("The JWT is too old or issued in the future");
    return bad(`The JWT ${e.claim} claim is missing or invalid`);
  }
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return unrecognised(answer, `The JWT must be signed with ${ALGORITHM} (client ${clientId})`);
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) {
    return unrecognised(answer, `The JWT signature does not verify with the key of client ${clientId}`);
  }
  return unrecognised(answer, `The JWT cannot be verified (client ${clientId}): ${(e as Error)?.message ?? "unknown failure"}`);
}

/**
 * Part B authentication (enrollment-api.md): the access-token request proves possession of the client's private
 * key and identifier; every later call proves possession of the key and a live access token. Each JWT's jti is
 * remembered until the JWT would be refused anyway, so a captured JWT cannot be replayed.
 */
export class TokenService {
  private readonly keys = new Map<string, KeyObject>();

  constructor(
    private readonly tenants: TenantStore,
    private readonly store: EnrollmentStore,
    private readonly jti: JtiStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    /** the accepted `aud` values (--token-audience): VendorWSM, and KnoxWSM for Knox token-library clients */
    private readonly audiences: readonly string[],
  ) {}

  /** Checks a POST /svc/v1/auth/accesstoken body; answers the client it proves, admitted (see `admit`). */
  async identify(
    body: { clientIdentifierJwt: string; base64EncodedStringPublicKey: string },
    caller: Caller,
    seen: Attribution,
  ): Promise<PartBPrincipal> {
    const payload = this.decode(body.clientIdentifierJwt);
    const identifier = payload.clientIdentifier;
    if (claimEmpty(identifier)) {
      throw new AppError(catalog.BAD_REQUEST_CLIENTIDENTIFIER_CLAIM_NOT_POPULATED, "The clientIdentifier claim is null or empty");
    }
    const parsed = typeof identifier === "string" ? parseSecretToken(identifier, CLIENT_ID_PREFIX) : undefined;
    if (!parsed) throw unrecognised(UNRECOGNISED_CLIENT, "The clientIdentifier claim is not a client identifier");
    const client = await this.store.getClient(parsed.id);
    // compared for an unknown id too, so that "no such client" costs what "wrong secret" does
    const matches = secretMatches(parsed.secret, client?.identifierHash ?? UNKNOWN_SECRET_HASH);
    if (!client) throw unrecognised(UNRECOGNISED_CLIENT, `No client ${parsed.id}`);
    if (!matches) {
      throw unrecognised(UNRECOGNISED_CLIENT, `The clientIdentifier's secret is not client ${client.clientId}'s`);
    }
    if (client.revokedAt !== null) throw unrecognised(UNRECOGNISED_CLIENT, `Client ${client.clientId} is revoked`);
    seen.clientId = client.clientId;
    seen.tenantId = client.tenantId;
    if (!sameKey(body.base64EncodedStringPublicKey, client.publicKey)) {
      throw unrecognised(UNRECOGNISED_CLIENT, `base64EncodedStringPublicKey is not client ${client.clientId}'s key`);
    }

    const nowMs = this.clock.nowMs();
    const claims = await this.verify(body.clientIdentifierJwt, client, nowMs, ["jti", "iat", "exp"], TOKEN_REQUEST_MAX_LIFETIME_SEC, UNRECOGNISED_CLIENT);
    if (claims.exp! > nowMs / 1000 + TOKEN_REQUEST_MAX_LIFETIME_SEC + CLOCK_TOLERANCE_SEC) {
      throw bad(`The JWT exp may be at most ${TOKEN_REQUEST_MAX_LIFETIME_SEC} s ahead`);
    }
    await this.rememberJti(client, claims.jti!, (claims.exp! + CLOCK_TOLERANCE_SEC) * 1000, nowMs);
    return this.admit(client, caller);
  }

  /** Issues an access token to an identified client; only the token's hash is kept. */
  async mint(client: ApiClient, validityMinutes: number): Promise<string> {
    if (!Number.isInteger(validityMinutes) || validityMinutes < MIN_VALIDITY_MINUTES || validityMinutes > MAX_VALIDITY_MINUTES) {
      throw bad(`validityForAccessTokenInMinutes must be ${MIN_VALIDITY_MINUTES}..${MAX_VALIDITY_MINUTES}`);
    }
    const nowMs = this.clock.nowMs();
    const t = newSecretToken(this.rng, ACCESS_TOKEN_PREFIX);
    await this.store.createAccessToken({
      tokenId: t.id,
      clientId: client.clientId,
      tokenHash: t.hash,
      expiresAtMs: nowMs + validityMinutes * 60_000,
      createdAt: new Date(nowMs).toISOString(),
    });
    return t.token;
  }

  /** Checks an x-vendor-apitoken header value. */
  async authenticate(header: string | undefined, caller: Caller, seen: Attribution): Promise<PartBPrincipal> {
    if (header === undefined || header === "") {
      throw new AppError(catalog.B_AUTHORIZATION_FAIL, "The x-vendor-apitoken header is missing");
    }
    const payload = this.decode(header);
    const accessToken = payload.accessToken;
    if (claimEmpty(accessToken)) {
      throw new AppError(catalog.BAD_REQUEST_ACCESS_TOKEN_CLAIM_NOT_POPULATED, "The accessToken claim is null or empty");
    }
    const nowMs = this.clock.nowMs();
    const parsed = typeof accessToken === "string" ? parseSecretToken(accessToken, ACCESS_TOKEN_PREFIX) : undefined;
    if (!parsed) throw unrecognised(UNRECOGNISED_TOKEN, "The accessToken claim is not an access token");
    const record = await this.store.getAccessToken(parsed.id);
    const matches = secretMatches(parsed.secret, record?.tokenHash ?? UNKNOWN_SECRET_HASH);
    if (!record) throw unrecognised(UNRECOGNISED_TOKEN, `No access token ${parsed.id}`);
    if (!matches) {
      throw unrecognised(UNRECOGNISED_TOKEN, `The accessToken's secret is not that of token ${record.tokenId}`);
    }
    if (record.expiresAtMs <= nowMs) {
      throw unrecognised(UNRECOGNISED_TOKEN, `Access token ${record.tokenId} expired at ${new Date(record.expiresAtMs).toISOString()}`);
    }
    // revoking deletes a client's tokens; the check covers a token minted while the revocation committed
    const client = await this.store.getClient(record.clientId);
    if (!client) throw unrecognised(UNRECOGNISED_TOKEN, `Access token ${record.tokenId}'s client ${record.clientId} no longer exists`);
    if (client.revokedAt !== null) throw unrecognised(UNRECOGNISED_TOKEN, `Access token ${record.tokenId}'s client ${client.clientId} is revoked`);
    seen.clientId = client.clientId;
    seen.tenantId = client.tenantId;

    const claims = await this.verify(header, client, nowMs, ["jti", "iat"], API_TOKEN_MAX_AGE_SEC, UNRECOGNISED_TOKEN);
    await this.rememberJti(client, claims.jti!, (claims.iat! + API_TOKEN_MAX_AGE_SEC + CLOCK_TOLERANCE_SEC) * 1000, nowMs);
    return this.admit(client, caller);
  }

  private decode(jwt: string): JWTPayload {
    if (jwt.length > MAX_JWT_LENGTH) throw bad("The JWT is too long");
    try {
      return decodeJwt(jwt);
    } catch {
      throw bad("The JWT cannot be parsed");
    }
  }

  private async verify(jwt: string, client: ApiClient, nowMs: number, required: string[], maxAgeSec: number, answer: Unrecognised) {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, this.publicKey(client), {
        algorithms: [ALGORITHM],
        audience: [...this.audiences],
        currentDate: new Date(nowMs),
        clockTolerance: CLOCK_TOLERANCE_SEC,
        maxTokenAge: maxAgeSec,
        requiredClaims: required,
      }));
    } catch (e) {
      throw verifyFailure(e, this.audiences, answer, client.clientId);
    }
    if (payload.iat! > nowMs / 1000 + CLOCK_TOLERANCE_SEC) throw bad("The JWT is too old or issued in the future");
    if (!sameKey(payload.publicKey, client.publicKey)) throw unrecognised(answer, `The JWT publicKey claim is not client ${client.clientId}'s key`);
    if (typeof payload.jti !== "string" || payload.jti === "" || payload.jti.length > MAX_JTI_LENGTH) {
      throw bad(`The JWT jti must be a string of 1..${MAX_JTI_LENGTH} characters`);
    }
    return payload;
  }

  private async rememberJti(client: ApiClient, jti: string, untilMs: number, nowMs: number): Promise<void> {
    // jti values are the client's choice, so they are unique per client, not globally
    if (!(await this.jti.remember(`${client.clientId}:${jti}`, untilMs, nowMs))) throw bad("The JWT jti was already used");
  }

  /**
   * The checks every authenticated call passes after the credentials: the key's restrictions first (a caller from
   * outside them learns nothing more), then the user's registration and the tenant's standing.
   */
  private async admit(client: ApiClient, caller: Caller): Promise<PartBPrincipal> {
    const refused = restrictionRefusal(client.restrictions, caller);
    if (refused) throw new AppError(catalog.B_FORBIDDEN, refused);
    const user = await this.store.getUser(client.userId);
    if (!user || user.state !== "registered") {
      throw new AppError(catalog.USER_AUTHENTICATION_FAIL, "The client's user is not registered");
    }
    const tenant = await this.tenants.getTenant(client.tenantId);
    if (!tenant) throw unrecognised(UNRECOGNISED_CLIENT, `Client ${client.clientId}'s tenant ${client.tenantId} no longer exists`);
    const refusal = tenantRefusal(tenant);
    if (refusal) throw refusal;
    return { tenant, client, user };
  }

  private publicKey(client: ApiClient): KeyObject {
    let key = this.keys.get(client.clientId);
    if (!key) {
      key = createPublicKey({ key: Buffer.from(client.publicKey, "base64"), format: "der", type: "spki" });
      if (this.keys.size >= 10_000) this.keys.clear();
      this.keys.set(client.clientId, key);
    }
    return key;
  }
}
