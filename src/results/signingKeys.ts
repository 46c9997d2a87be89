import type { ChangeActor } from "../services/auditTrail.ts";
import { createPrivateKey, generateKeyPair, type KeyObject } from "node:crypto";
import { promisify } from "node:util";
import { calculateJwkThumbprint, exportJWK, type JWK } from "jose";
import type { Clock } from "../clock.ts";
import type { EarAlgorithm, SigningKeyRecord } from "../domain/signingKeys.ts";
import { sealContext, type SecretBox } from "../secrets/secretBox.ts";
import { EAR_SIGNING_KEY_PURPOSE } from "../store/sealedColumns.ts";
import type { SigningKeyStore } from "../store/types.ts";

/**
 * The keys results are signed with: made here, kept in the store (so every instance signs with the same key), and
 * held by each instance in an `EarKeyRing` that re-reads the store every `--ear-key-refresh` seconds, so a rotation
 * (`attestd keys rotate`) reaches every running instance within that time. A rotated-out key stays published in the
 * JWKS until its `retiresAt` (`--ear-key-grace` after the rotation), so results signed just before still verify.
 * The private key is stored sealed with the operator's secrets key (src/secrets/), bound to its kid, like the
 * tenants' private keys: a copy of the database alone signs nothing.
 */

const generate = promisify(generateKeyPair);

/** A public key as GET /.well-known/jwks.json lists it: EC (crv, x, y) or RSA (n, e). */
export interface PublicJwk {
  kty: string;
  kid: string;
  alg: EarAlgorithm;
  use: "sig";
  crv?: string;
  x?: string;
  y?: string;
  n?: string;
  e?: string;
}

async function generateFor(alg: EarAlgorithm): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  switch (alg) {
    case "ES256":
      return generate("ec", { namedCurve: "P-256" });
    case "ES384":
      return generate("ec", { namedCurve: "P-384" });
    case "PS256":
      return generate("rsa", { modulusLength: 3072 });
  }
}

/** A new key pair as the store keeps it: kid = its RFC 7638 thumbprint, the private key as PKCS#8 PEM, sealed. */
export async function newSigningKey(alg: EarAlgorithm, createdAt: Date, secrets: SecretBox): Promise<SigningKeyRecord> {
  const { privateKey, publicKey } = await generateFor(alg);
  const jwk: JWK = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  const { kty, crv, x, y, n, e } = jwk;
  const published: PublicJwk = { kty: kty!, kid, alg, use: "sig", ...(crv ? { crv, x: x!, y: y! } : { n: n!, e: e! }) };
  return {
    kid,
    alg,
    publicJwk: JSON.stringify(published),
    privateKey: secrets.seal(privateKey.export({ type: "pkcs8", format: "pem" }) as string, sealContext(EAR_SIGNING_KEY_PURPOSE, kid)),
    createdAt: createdAt.toISOString(),
    retiresAt: null,
  };
}

/** Makes a new current key; the one before stays published for `graceSeconds`. What `attestd keys rotate` does. */
export async function rotateSigningKey(
  store: SigningKeyStore,
  clock: Clock,
  secrets: SecretBox,
  opts: { alg: EarAlgorithm; graceSeconds: number },
  by: ChangeActor,
): Promise<{ kid: string; alg: EarAlgorithm; retired: string | null; retiresAt: string | null }> {
  const now = clock.nowMs();
  const key = await newSigningKey(opts.alg, new Date(now), secrets);
  const retiresAt = new Date(now + opts.graceSeconds * 1000).toISOString();
  const { retired } = await store.rotateSigningKey(key, retiresAt);
  const answer = { kid: key.kid, alg: key.alg, retired, retiresAt: retired ? retiresAt : null };
  // operator-wide (no tenant); the record names the kids and dates, never the private key
  await by.record({ tenantId: null, action: "signing-key.rotated", target: { kind: "signing-key", id: key.kid }, before: retired ? { current: retired } : null, after: answer });
  return answer;
}

export interface CurrentSigningKey {
  kid: string;
  alg: EarAlgorithm;
  key: KeyObject;
}

export interface EarKeyRingOptions {
  /** the algorithm of the key made on first start */
  alg: EarAlgorithm;
  /** how often the store is re-read (ms) */
  refreshMs: number;
  /** a failed re-read (the store unreachable): the ring keeps what it has */
  onRefreshError?: (err: unknown) => void;
}

/** One instance's view of the signing keys: the current one (private) and the published ones (public). */
export class EarKeyRing {
  private current!: CurrentSigningKey;
  private published: { jwk: PublicJwk; retiresAt: string | null }[] = [];
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly store: SigningKeyStore,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly opts: EarKeyRingOptions,
  ) {}

  /**
   * Loads the keys, making the first one when the store has none. Instances starting together each offer a key and
   * all end up with the one the store kept (putFirstSigningKey).
   */
  static async open(store: SigningKeyStore, clock: Clock, secrets: SecretBox, opts: EarKeyRingOptions): Promise<EarKeyRing> {
    const ring = new EarKeyRing(store, clock, secrets, opts);
    const keys = await store.listSigningKeys(ring.nowIso());
    if (!keys.some((k) => k.retiresAt === null)) {
      await store.putFirstSigningKey(await newSigningKey(opts.alg, new Date(clock.nowMs()), secrets));
    }
    await ring.refresh();
    return ring;
  }

  private nowIso(): string {
    return new Date(this.clock.nowMs()).toISOString();
  }

  /** Re-reads the store: a rotation elsewhere becomes this instance's current key. */
  async refresh(): Promise<void> {
    const keys = await this.store.listSigningKeys(this.nowIso());
    const current = keys.find((k) => k.retiresAt === null);
    // Only a rotation with no key after it could leave none (it never does); keep signing with what we have.
    if (!current) return;
    if (this.current?.kid !== current.kid) {
      const pem = this.secrets.open(current.privateKey, sealContext(EAR_SIGNING_KEY_PURPOSE, current.kid));
      this.current = { kid: current.kid, alg: current.alg, key: createPrivateKey(pem) };
    }
    this.published = keys.map((k) => ({ jwk: JSON.parse(k.publicJwk) as PublicJwk, retiresAt: k.retiresAt }));
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.refresh().catch((err: unknown) => this.opts.onRefreshError?.(err)), this.opts.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  signingKey(): CurrentSigningKey {
    return this.current;
  }

  /** The public keys to publish now: the current one and those not yet retired, newest first. */
  publicKeys(): PublicJwk[] {
    const now = this.nowIso();
    return this.published.filter((k) => k.retiresAt === null || k.retiresAt > now).map((k) => k.jwk);
  }
}
