import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "../../src/portal/passkeys.ts";

/**
 * A WebAuthn authenticator in software, for HTTP tests of the portal's passkeys without a browser: what a
 * platform authenticator does (ES256 keys, "none" attestation, a signature counter, user verification) and what
 * the tests need it to do wrong on purpose (skip user verification, answer from a stale copy of a credential).
 * The browser tests use Chromium's own virtual authenticator (test/browser/harness.ts).
 */

interface Credential {
  id: Buffer;
  key: KeyObject;
  publicCose: Uint8Array;
  userHandle: string;
  rpId: string;
  counter: number;
}

const b64u = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest();

/** The COSE_Key of a P-256 public key (RFC 9053): kty EC2, alg ES256, crv P-256, x, y. */
function coseOf(key: KeyObject): Uint8Array {
  const jwk = key.export({ format: "jwk" });
  return isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, new Uint8Array(Buffer.from(jwk.x!, "base64url"))],
      [-3, new Uint8Array(Buffer.from(jwk.y!, "base64url"))],
    ]),
  );
}

/** A PublicKeyCredential as @simplewebauthn/browser serialises it, around an authenticator's response. */
function envelope<R>(cred: Credential, response: R) {
  return { id: b64u(cred.id), rawId: b64u(cred.id), type: "public-key" as const, authenticatorAttachment: "platform" as const, clientExtensionResults: {}, response };
}

export class SoftAuthenticator {
  private readonly credentials = new Map<string, Credential>();

  /** `verifyUser: false`: the authenticator reports presence only (a security key without a PIN) */
  constructor(private readonly opts: { verifyUser?: boolean; countsSignatures?: boolean } = {}) {}

  private flags(attested: boolean): number {
    // UP, UV unless told not to, AT when a credential is attested
    return 0x01 | (this.opts.verifyUser === false ? 0 : 0x04) | (attested ? 0x40 : 0);
  }

  private authData(rpId: string, flags: number, counter: number, attested?: Credential): Buffer {
    const head = Buffer.alloc(37);
    sha256(rpId).copy(head, 0);
    head.writeUInt8(flags, 32);
    head.writeUInt32BE(counter, 33);
    if (!attested) return head;
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(attested.id.length);
    return Buffer.concat([head, Buffer.alloc(16), idLength, attested.id, attested.publicCose]);
  }

  /** navigator.credentials.create() for these options, as the page at `origin` would call it. */
  register(options: { challenge: string; rp: { id?: string }; user: { id: string } }, origin: string): RegistrationResponseJSON {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const rpId = options.rp.id ?? new URL(origin).hostname;
    const cred: Credential = { id: randomBytes(16), key: privateKey, publicCose: coseOf(publicKey), userHandle: options.user.id, rpId, counter: 0 };
    this.credentials.set(b64u(cred.id), cred);
    const clientDataJSON = JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin, crossOrigin: false });
    const authData = this.authData(rpId, this.flags(true), cred.counter, cred);
    const attestationObject = isoCBOR.encode(new Map<string, unknown>([["fmt", "none"], ["attStmt", new Map()], ["authData", new Uint8Array(authData)]]) as never);
    return envelope(cred, { clientDataJSON: b64u(clientDataJSON), attestationObject: b64u(attestationObject), transports: ["internal"] });
  }

  /** navigator.credentials.get(): signs with `credentialId`, or the one credential held for the RP. */
  authenticate(options: { challenge: string; rpId?: string }, origin: string, credentialId?: string): AuthenticationResponseJSON {
    const rpId = options.rpId ?? new URL(origin).hostname;
    const cred = credentialId ? this.credentials.get(credentialId) : [...this.credentials.values()].find((c) => c.rpId === rpId);
    if (!cred) throw new Error("no credential for this RP");
    if (this.opts.countsSignatures !== false) cred.counter++;
    const clientDataJSON = JSON.stringify({ type: "webauthn.get", challenge: options.challenge, origin, crossOrigin: false });
    const authenticatorData = this.authData(rpId, this.flags(false), cred.counter);
    const signature = sign("sha256", Buffer.concat([authenticatorData, sha256(clientDataJSON)]), cred.key);
    return envelope(cred, { clientDataJSON: b64u(clientDataJSON), authenticatorData: b64u(authenticatorData), signature: b64u(signature), userHandle: cred.userHandle });
  }

  /** Another authenticator holding a copy of this one's credential as it was (its counter frozen at the copy). */
  clone(credentialId: string): SoftAuthenticator {
    const copy = new SoftAuthenticator(this.opts);
    const cred = this.credentials.get(credentialId)!;
    copy.credentials.set(credentialId, { ...cred });
    return copy;
  }
}
