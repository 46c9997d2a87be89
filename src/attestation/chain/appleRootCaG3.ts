import { createHash } from "node:crypto";

/**
 * Apple Root CA - G3 (P-384, 2014-04-30 .. 2039-04-30), the root App Attest receipts chain to: Apple's receipt
 * signer ("Application Attestation Fraud Receipt Signing") is issued by "Apple Application Integration CA 5 - G1",
 * which this root issued. It is NOT the App Attestation Root CA that the attestation's x5c chains to.
 *
 * Built in as a constant (not a file) so the pure appraisal needs no I/O. Taken from the certificate set of the
 * real receipts in test/vectors/app-attest/ and checked against the SHA-256 fingerprint Apple publishes at
 * https://www.apple.com/certificateauthority/ (AppleRootCA-G3.cer):
 * 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79.
 * A receipt carrying a look-alike root does not get it trusted: only these bytes are.
 */
const APPLE_ROOT_CA_G3_BASE64 =
  "MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBD" +
  "ZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgx" +
  "OTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQK" +
  "DApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf" +
  "TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4ia" +
  "pIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZL" +
  "uN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM6BgD56KyKA==";

/** the fingerprint Apple publishes, lowercase hex */
export const APPLE_ROOT_CA_G3_SHA256 = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179";

export const APPLE_ROOT_CA_G3_DER: Uint8Array = (() => {
  const der = new Uint8Array(Buffer.from(APPLE_ROOT_CA_G3_BASE64, "base64"));
  // an edit of the constant above must fail loudly at start-up, never quietly trust another root
  if (createHash("sha256").update(der).digest("hex") !== APPLE_ROOT_CA_G3_SHA256) {
    throw new Error("built-in Apple Root CA - G3 does not match Apple's published fingerprint");
  }
  return der;
})();
