import {
  createPlayDevCa,
  makePlayIntegrityToken,
  playConsoleKeys,
  type PlayConsoleKeys,
  type PlayDevCa,
} from "../../src/attestation/sim/playIntegrity.ts";
import type { Deployment } from "./attestd.ts";
import type { LoadRequest } from "./load.ts";
import { attestdCli } from "./processes.ts";

/**
 * The Play Integrity side of the HTTPS benchmark (issue 23 item 6): a demo app with Google's keys for it (the
 * simulator's `createPlayDevCa`, what `attestd dev-ca --play-integrity` writes), registered for the bench's tenant
 * with the real CLI as README's walk-through part 4 does, and per nonce the token Google would hand the app.
 */
export interface PlayFixture {
  ca: PlayDevCa;
  /** the response keys as the Play Console shows them: what `play-app add` and the baseline take */
  keys: PlayConsoleKeys;
}

export function createPlayFixture(): PlayFixture {
  const ca = createPlayDevCa();
  return { ca, keys: playConsoleKeys(ca) };
}

/** `attestd play-app add` on the deployment's store (before `serve` starts), as the walk-through registers the demo app. */
export async function registerPlayApp(d: Deployment, fx: PlayFixture, tenant = "bench"): Promise<void> {
  await attestdCli([
    "play-app", "add",
    "--tenant", tenant,
    "--package", fx.ca.packageName,
    "--cert-digest", Buffer.from(fx.ca.certDigest).toString("hex"),
    "--decryption-key", fx.keys.decryptionKey,
    "--verification-key", fx.keys.verificationKey,
    ...d.storeArgs,
    "--log-level", "warn",
  ]);
}

/**
 * One token per nonce (a standard request: the nonce as requestHash; a recognised app on a device that meets
 * device integrity, so attestd answers Yes), each sealed afresh as Google seals it.
 */
export async function playRequestsFor(fx: PlayFixture, nonces: readonly string[]): Promise<{ requests: LoadRequest[]; buildMs: number }> {
  const t0 = performance.now();
  const requests: LoadRequest[] = [];
  // in batches: jose's WebCrypto signing runs on the thread pool and overlaps the JSON and AES work on this thread
  const BATCH = 32;
  for (let from = 0; from < nonces.length; from += BATCH) {
    const batch = nonces.slice(from, from + BATCH).map(async (nonce) => ({
      path: `/v2/blobs?nonce=${nonce}`,
      body: Buffer.from(await makePlayIntegrityToken(fx.ca, { nonce }), "latin1"),
    }));
    requests.push(...(await Promise.all(batch)));
  }
  return { requests, buildMs: Math.round(performance.now() - t0) };
}
