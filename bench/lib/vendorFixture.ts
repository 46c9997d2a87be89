import { writeFile } from "node:fs/promises";
import path from "node:path";
import { createDevCa, issueDeviceLeaf, writeDevCa, type CertifiedKey, type DevCa } from "../../src/attestation/sim/devCa.ts";
import { demoReferenceValues, encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";

/**
 * The vendor side of the HTTP benchmark: a dev CA (EC P-256 root and intermediate, as `attestd dev-ca` makes
 * them), a small fleet of devices with EC P-256 leaves, and the reference values under which their blobs
 * appraise as Yes. Blobs carry leaf + intermediate (not the root), like the reference device.
 */
export interface VendorFixture {
  ca: DevCa;
  devices: CertifiedKey[];
  /** --vendor-roots */
  rootsFile: string;
  /** --reference-values */
  referenceValuesFile: string;
}

export async function createVendorFixture(dir: string, deviceCount: number): Promise<VendorFixture> {
  const ca = await createDevCa({ keyType: "ec" });
  await writeDevCa(ca, path.join(dir, "dev-ca"));
  const devices: CertifiedKey[] = [];
  for (let i = 0; i < deviceCount; i++) devices.push(await issueDeviceLeaf(ca, { keyType: "ec" }));
  const referenceValuesFile = path.join(dir, "reference-values.json");
  await writeFile(referenceValuesFile, JSON.stringify(demoReferenceValues(), null, 2));
  return { ca, devices, rootsFile: path.join(dir, "dev-ca", "root.pem"), referenceValuesFile };
}

/** One blob per nonce, the devices taking turns; each blob is signed afresh (ECDSA, random k). */
export function buildBlobs(fx: VendorFixture, nonces: readonly string[]): Buffer[] {
  return nonces.map((nonce, i) =>
    Buffer.from(encodeVendorBlob({ nonce, leaf: fx.devices[i % fx.devices.length]!, ca: fx.ca })),
  );
}
