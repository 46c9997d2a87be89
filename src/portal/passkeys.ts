import type { ChangeActor } from "../services/auditTrail.ts";
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransportFuture,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  VerifiedAuthenticationResponse,
  VerifiedRegistrationResponse,
} from "@simplewebauthn/server";
import type { Clock, Rng } from "../clock.ts";
import type { PasskeyChallenge, PortalPasskey, PortalUser } from "../domain/portal.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { RateLimiter } from "../services/rateLimiter.ts";
import type { PortalStore } from "../store/types.ts";
import { retryAfter } from "./accounts.ts";
import { sha256, type Actor } from "./sessions.ts";
import { unsafeCharIn, unsafeTextReason } from "../domain/text.ts";

/** The browser's answers, as @simplewebauthn/browser sends them (the HTTP layer names them without the library). */
export type { AuthenticationResponseJSON, RegistrationResponseJSON };

/** A ceremony is a person at a prompt: two minutes to touch the key or show a face, then it is void. */
export const CHALLENGE_TTL_MS = 120_000;
export const PASSKEY_NAME_MAX = 60;

/** Who the passkeys belong to: the configured public origin (--public-url) and its host name as the RP ID. */
export interface RelyingParty {
  /** `https://attest.example` (no path) */
  origin: string;
  name: string;
}

/**
 * The library and its own ASN.1 and CBOR dependencies are loaded at the first ceremony rather than at start-up:
 * they add a noticeable share to every `serve` start, and most starts see no passkey for a while.
 */
let library: Promise<typeof import("@simplewebauthn/server")> | undefined;
const webauthn = () => (library ??= import("@simplewebauthn/server"));

/** The user handle a passkey carries: the user's id, which is random and names no one. */
const userHandle = (userId: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(userId, "utf8"));

/**
 * Passkeys (WebAuthn, with @simplewebauthn/server): registering one while signed in, signing in with one alone
 * (a discoverable credential, user verification required), listing, renaming and deleting them. Each ceremony's
 * challenge is random, kept in the store (so another instance can finish it), taken once and void after two
 * minutes. The authenticator's signature counter is kept: a sign-in whose counter does not move forward is a
 * copy of the credential and refused.
 */
export class PortalPasskeys {
  readonly rpId: string;

  constructor(
    private readonly store: PortalStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly limiter: RateLimiter,
    readonly rp: RelyingParty,
  ) {
    this.rpId = new URL(rp.origin).hostname;
  }

  /**
   * A passkey is bound to one origin; a ceremony begun elsewhere (the service reached by its IP address, another
   * name, a port a proxy rewrote) can only fail in the browser with an opaque error, so it is refused here, naming
   * both addresses.
   */
  checkOrigin(seen: string): void {
    if (seen !== this.rp.origin) {
      throw new AppError(
        catalog.PORTAL_WRONG_HOST,
        `passkeys here belong to ${this.rp.origin} (--public-url), and this page is ${seen}: open ${this.rp.origin}/portal/`,
      );
    }
  }

  private async newChallenge(purpose: PasskeyChallenge["purpose"], userId: string | null): Promise<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(this.rng.bytes(32));
    const challengeHash = sha256(Buffer.from(bytes).toString("base64url"));
    await this.store.createPasskeyChallenge({ challengeHash, purpose, userId, expiresAtMs: this.clock.nowMs() + CHALLENGE_TTL_MS });
    return bytes;
  }

  /**
   * The challenge a response answers, taken from the store: undefined when it is unknown, spent, expired or of
   * another ceremony. Taken before the response is verified, so a failed attempt spends it too.
   */
  private async takeChallenge(clientDataJSON: string, purpose: PasskeyChallenge["purpose"]): Promise<{ challenge: string; ceremony: PasskeyChallenge } | undefined> {
    let challenge: unknown;
    try {
      challenge = (JSON.parse(Buffer.from(clientDataJSON, "base64url").toString("utf8")) as { challenge?: unknown }).challenge;
    } catch {
      return undefined;
    }
    if (typeof challenge !== "string" || challenge.length === 0 || challenge.length > 128) return undefined;
    const ceremony = await this.store.takePasskeyChallenge(sha256(challenge), this.clock.nowMs());
    return ceremony && ceremony.purpose === purpose ? { challenge, ceremony } : undefined;
  }

  /** Options for navigator.credentials.create(): a resident key with user verification, none already registered. */
  async registrationOptions(actor: Actor): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.store.listPasskeys(actor.userId);
    return (await webauthn()).generateRegistrationOptions({
      rpName: this.rp.name,
      rpID: this.rpId,
      userName: actor.email,
      userDisplayName: actor.email,
      userID: userHandle(actor.userId),
      challenge: await this.newChallenge("register", actor.userId),
      timeout: CHALLENGE_TTL_MS,
      attestationType: "none",
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports as AuthenticatorTransportFuture[] })),
      authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
    });
  }

  /** Verifies the authenticator's answer and keeps the passkey; the signed-in user must be the one who began. */
  async finishRegistration(actor: Actor, response: RegistrationResponseJSON, name: string | undefined, by: ChangeActor): Promise<PortalPasskey> {
    const taken = await this.takeChallenge(response.response.clientDataJSON, "register");
    if (!taken || taken.ceremony.userId !== actor.userId) {
      throw new AppError(catalog.PORTAL_PASSKEY_REJECTED, "this passkey ceremony expired or was already used: start again");
    }
    let verified: VerifiedRegistrationResponse;
    try {
      verified = await (await webauthn()).verifyRegistrationResponse({
        response,
        expectedChallenge: taken.challenge,
        expectedOrigin: this.rp.origin,
        expectedRPID: this.rpId,
        requireUserVerification: true,
      });
    } catch (e) {
      // the library's reason names the check that failed (origin, RP ID, user verification, algorithm)
      throw new AppError(catalog.PORTAL_PASSKEY_REJECTED, (e as Error).message.slice(0, 300));
    }
    if (!verified.verified) throw new AppError(catalog.PORTAL_PASSKEY_REJECTED, "the authenticator's answer did not verify");
    const info = verified.registrationInfo;
    const count = (await this.store.listPasskeys(actor.userId)).length;
    const passkey: PortalPasskey = {
      credentialId: info.credential.id,
      userId: actor.userId,
      publicKey: Buffer.from(info.credential.publicKey).toString("base64url"),
      counter: info.credential.counter,
      transports: (response.response.transports ?? []).slice(0, 8),
      backedUp: info.credentialBackedUp,
      name: passkeyName(name) ?? `Passkey ${count + 1}`,
      createdAt: new Date(this.clock.nowMs()).toISOString(),
      lastUsedAt: null,
    };
    if ((await this.store.createPasskey(passkey)) === "exists") {
      throw new AppError(catalog.PORTAL_PASSKEY_EXISTS, "this passkey is registered already");
    }
    await by.record({ tenantId: actor.tenantId, action: "portal.passkey.added", target: { kind: "passkey", id: passkey.credentialId }, before: null, after: { credentialId: passkey.credentialId, name: passkey.name, transports: passkey.transports, backedUp: passkey.backedUp, createdAt: passkey.createdAt } });
    return passkey;
  }

  /**
   * Options for navigator.credentials.get() with no credential named: the browser offers the passkeys it holds
   * for this site. Each start counts against the address's sign-in attempts (the password form's bucket).
   */
  async signInOptions(remoteAddress: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const limit = await this.limiter.forSignInAddress(remoteAddress);
    if (!limit.allowed) throw new AppError(catalog.TOO_MANY_REQUESTS, "Too many sign-in attempts; wait and try again", retryAfter(limit));
    return (await webauthn()).generateAuthenticationOptions({
      rpID: this.rpId,
      challenge: await this.newChallenge("signin", null),
      timeout: CHALLENGE_TTL_MS,
      userVerification: "required",
      allowCredentials: [],
    });
  }

  /**
   * The passkey's user, signed in. An unknown passkey, a bad signature, a spent challenge and a user who is not
   * active get the same answer; a counter that did not move forward gets its own, since the person should know.
   */
  async finishSignIn(response: AuthenticationResponseJSON): Promise<PortalUser> {
    const failed = () => new AppError(catalog.PORTAL_PASSKEY_SIGNIN_FAILED, "The passkey was not accepted");
    const taken = await this.takeChallenge(response.response.clientDataJSON, "signin");
    if (!taken) throw failed();
    const passkey = await this.store.getPasskey(response.id);
    const user = passkey && (await this.store.getPortalUser(passkey.userId));
    if (!passkey || !user || user.state !== "active") throw failed();
    const handle = response.response.userHandle;
    if (handle !== undefined && handle !== Buffer.from(userHandle(user.userId)).toString("base64url")) throw failed();
    let verified: VerifiedAuthenticationResponse;
    try {
      verified = await (await webauthn()).verifyAuthenticationResponse({
        response,
        expectedChallenge: taken.challenge,
        expectedOrigin: this.rp.origin,
        expectedRPID: this.rpId,
        requireUserVerification: true,
        // The counter rule is the store's conditional update below, which also settles two concurrent uses of one
        // value; the library is given 0 so it checks the signature alone.
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(Buffer.from(passkey.publicKey, "base64url")),
          counter: 0,
          transports: passkey.transports as AuthenticatorTransportFuture[],
        },
      });
    } catch {
      throw failed();
    }
    if (!verified.verified) throw failed();
    if (!(await this.store.recordPasskeyUse(passkey.credentialId, verified.authenticationInfo.newCounter, new Date(this.clock.nowMs()).toISOString()))) {
      throw new AppError(
        catalog.PORTAL_PASSKEY_CLONED,
        `the passkey "${passkey.name}" answered with signature counter ${verified.authenticationInfo.newCounter}, not above ${passkey.counter}: a copy of it may be in use`,
      );
    }
    return user;
  }

  list(userId: string): Promise<PortalPasskey[]> {
    return this.store.listPasskeys(userId);
  }

  async rename(userId: string, credentialId: string, name: string, by: ChangeActor, tenantId: string | null): Promise<void> {
    const clean = passkeyName(name);
    if (!clean) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `a passkey's name is 1 to ${PASSKEY_NAME_MAX} characters`);
    if (!(await this.store.renamePasskey(userId, credentialId, clean))) throw new AppError(catalog.PORTAL_NOT_FOUND, "you have no passkey of that id");
    await by.record({ tenantId, action: "portal.passkey.renamed", target: { kind: "passkey", id: credentialId }, before: null, after: { credentialId, name: clean } });
  }

  /** Removes one passkey of the user; their sessions and other passkeys stay. */
  async remove(userId: string, credentialId: string, by: ChangeActor, tenantId: string | null): Promise<void> {
    if (!(await this.store.deletePasskey(userId, credentialId))) throw new AppError(catalog.PORTAL_NOT_FOUND, "you have no passkey of that id");
    await by.record({ tenantId, action: "portal.passkey.removed", target: { kind: "passkey", id: credentialId }, before: { credentialId }, after: null });
  }

  purge(): Promise<number> {
    return this.store.purgePasskeyChallenges(this.clock.nowMs());
  }
}

/** Trimmed, at most PASSKEY_NAME_MAX; undefined when nothing is left. A control or bidi character is refused. */
function passkeyName(name: string | undefined): string | undefined {
  const unsafe = name ? unsafeCharIn(name) : undefined;
  if (unsafe) throw new AppError(catalog.PORTAL_INVALID_REQUEST, unsafeTextReason("a passkey's name", unsafe));
  const clean = (name ?? "").trim();
  return clean.length > 0 && [...clean].length <= PASSKEY_NAME_MAX ? clean : undefined;
}
