import { generateKeyPairSync, type KeyObject } from "node:crypto";
import path from "node:path";
import {
  ANDROID_DEV_CA_FILES,
  createAndroidDevCa,
  writeAndroidDevCa,
  type AndroidDevCa,
} from "../../src/attestation/sim/androidCa.ts";
import {
  attestAndroidKey,
  createAndroidDevice,
  encodeAndroidChain,
  type AndroidDevice,
} from "../../src/attestation/sim/androidDeviceSim.ts";
import type { LoadRequest } from "./load.ts";

/**
 * The Android side of the HTTPS benchmark (issue 15): the demo Android PKI (`attestd dev-ca --android`: EC P-384
 * root, "Droid CA2"), a small fleet of RKP devices (each its own device CA under Droid CA2, as Google's RKP
 * servers issue them), and per nonce the chain KeyMint would return: leaf with the KeyDescription for that nonce,
 * device CA, Droid CA2, root — DER end to end, the shape of a real RKP phone's chain.
 */
export interface AndroidFixture {
  ca: AndroidDevCa;
  devices: { device: AndroidDevice; leafKey: KeyObject }[];
  /** --android-roots */
  rootsFile: string;
  /** --android-status (and the baseline's status list) */
  statusFile: string;
}

export async function createAndroidFixture(dir: string, deviceCount: number): Promise<AndroidFixture> {
  const ca = await createAndroidDevCa();
  const caDir = path.join(dir, "android-dev-ca");
  await writeAndroidDevCa(ca, caDir);
  const devices: AndroidFixture["devices"] = [];
  for (let i = 0; i < deviceCount; i++) {
    // one attested key per device, certified afresh for every nonce (a new leaf, a new KeyDescription, a new
    // signature): generating a key pair per nonce would only slow the pool down, not the server
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    devices.push({ device: await createAndroidDevice(ca, { provisioning: "rkp", securityLevel: "tee" }), leafKey: privateKey });
  }
  return {
    ca,
    devices,
    rootsFile: path.join(caDir, ANDROID_DEV_CA_FILES.root),
    statusFile: path.join(caDir, ANDROID_DEV_CA_FILES.status),
  };
}

/** One android-key request per nonce, the devices taking turns, each chain made for its nonce. */
export async function androidRequestsFor(fx: AndroidFixture, nonces: readonly string[]): Promise<{ requests: LoadRequest[]; buildMs: number }> {
  const t0 = performance.now();
  const requests: LoadRequest[] = [];
  // in batches, so that WebCrypto's signing on the thread pool overlaps the certificate building on this thread
  const BATCH = 32;
  for (let from = 0; from < nonces.length; from += BATCH) {
    const batch = nonces.slice(from, from + BATCH).map(async (nonce, k) => {
      const { device, leafKey } = fx.devices[(from + k) % fx.devices.length]!;
      const chain = await attestAndroidKey(device, { nonce, leafKey });
      return { path: `/v2/blobs?nonce=${nonce}`, body: encodeAndroidChain(chain, "der") };
    });
    requests.push(...(await Promise.all(batch)));
  }
  return { requests, buildMs: Math.round(performance.now() - t0) };
}
