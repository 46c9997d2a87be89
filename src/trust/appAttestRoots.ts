import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import type { AppAttestTrust } from "../attestation/types.ts";

/**
 * App Attest's trust anchor: Apple's App Attestation Root CA, built in (appleAppAttestationRootCa.pem, as Apple
 * publishes it: CN=Apple App Attestation Root CA, O=Apple Inc., ST=California, P-384, valid 2020-03-18 ..
 * 2045-03-15, SHA-256 fingerprint 1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932), or the
 * operator's `--app-attest-roots FILE` (a PEM bundle), which replaces it as `--android-roots` replaces Google's
 * roots (the demo root of `attestd dev-ca --app-attest`, for one). Read once at start; a file that does not hold
 * at least one CA certificate stops start-up with one line.
 */

export const BUILT_IN_APP_ATTEST_ROOT_URL = new URL("./appleAppAttestationRootCa.pem", import.meta.url);
export const APPLE_APP_ATTEST_ROOT_SHA256 = "1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932";

let builtIn: AppAttestTrust | undefined;

function readRoots(file: string, where: string): AppAttestTrust {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`${where}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const rootsDer = parsePemBundle(text, where);
  for (const [i, der] of rootsDer.entries()) {
    let ca = false;
    try {
      ca = new X509Certificate(der).ca;
    } catch {
      // reported below
    }
    if (!ca) throw new Error(`${where}: certificate ${i} is not a CA certificate`);
  }
  if (rootsDer.length === 0) throw new Error(`${where}: no certificate`);
  return { rootsDer };
}

/** The built-in root, checked against its published fingerprint (a damaged installation stops start-up). */
export function builtInAppAttestTrust(): AppAttestTrust {
  if (builtIn) return builtIn;
  const file = fileURLToPath(BUILT_IN_APP_ATTEST_ROOT_URL);
  const trust = readRoots(file, `built-in App Attestation root ${file}`);
  const fingerprint = new X509Certificate(trust.rootsDer[0]!).fingerprint256.replaceAll(":", "");
  if (trust.rootsDer.length !== 1 || fingerprint !== APPLE_APP_ATTEST_ROOT_SHA256) {
    throw new Error(`built-in App Attestation root ${file}: not Apple's (SHA-256 ${fingerprint}): a damaged installation`);
  }
  return (builtIn = trust);
}

/** `--app-attest-roots FILE`, or the built-in root. */
export function loadAppAttestTrust(rootsFile: string | undefined): AppAttestTrust {
  return rootsFile === undefined ? builtInAppAttestTrust() : readRoots(rootsFile, `--app-attest-roots ${rootsFile}`);
}
