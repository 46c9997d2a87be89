import { createSecureContext } from "node:tls";

/**
 * The protocol versions and cipher suites `attestd serve` offers. By default: TLS 1.2 and 1.3, AEAD suites only,
 * with forward secrecy. TLS 1.3 has only AEAD suites; of TLS 1.2, the ECDHE ones with AES-GCM or ChaCha20-Poly1305
 * (ECDSA and RSA certificates alike). No CBC suite (Lucky13-style padding oracles), no static-RSA key exchange.
 * OpenSSL names; TLS 1.3 suites are the `TLS_` ones, and Node applies each name to the version it belongs to.
 */
export const AEAD_CIPHERS = [
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  "TLS_AES_128_GCM_SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
].join(":");

export const TLS_MIN_VERSIONS = ["TLSv1.2", "TLSv1.3"] as const;
export type TlsMinVersion = (typeof TLS_MIN_VERSIONS)[number];

export interface TlsPolicy {
  minVersion: TlsMinVersion;
  ciphers: string;
  /** the server's order wins, so a client offering a weaker suite first still gets the strongest both know */
  honorCipherOrder: true;
}

/** what the HTTPS server is given: the certificate chain and key, and the policy */
export type HttpsOptions = { cert: string; key: string } & Partial<TlsPolicy>;

/**
 * The policy from `--tls-min-version` and `--tls-ciphers`, checked with OpenSSL itself: a string in which it finds
 * no suite is refused here (a string), at start-up, rather than by every handshake.
 */
export function tlsPolicy(o: { tlsMinVersion: string; tlsCiphers: string }): TlsPolicy | string {
  const policy: TlsPolicy = { minVersion: o.tlsMinVersion as TlsMinVersion, ciphers: o.tlsCiphers, honorCipherOrder: true };
  try {
    createSecureContext(policy);
  } catch (e) {
    return `--tls-ciphers ${JSON.stringify(o.tlsCiphers)}: ${(e as Error).message}`;
  }
  return policy;
}
