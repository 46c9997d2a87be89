import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { webcrypto } from "node:crypto";
import path from "node:path";
import { ensurePrivateDir, writePrivateFile } from "../secrets/privateFiles.ts";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export interface DevTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

const EC = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN = { name: "ECDSA", hash: "SHA-256" } as const;

async function exportKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

/**
 * The embedded default's TLS: a local root CA, an intermediate and a leaf for localhost / 127.0.0.1 / ::1, made
 * once in `<dataDir>/tls/` and reused. The server presents leaf + intermediate (a full chain, as the spec asks),
 * and `curl --cacert <dataDir>/tls/ca.pem` trusts it. The CA private key is not kept: nothing else gets signed.
 */
export async function ensureDevTls(dataDir: string, now = new Date()): Promise<DevTlsFiles & { created: boolean }> {
  const dir = path.join(dataDir, "tls");
  const files = {
    caFile: path.join(dir, "ca.pem"),
    certFile: path.join(dir, "server-fullchain.pem"),
    keyFile: path.join(dir, "server.key.pem"),
  };
  if (existsSync(files.caFile) && existsSync(files.certFile) && existsSync(files.keyFile)) {
    const leaf = new x509.X509Certificate(readFileSync(files.certFile, "utf8").split(/(?=-----BEGIN)/)[0]!);
    // Renew a week before expiry so a long-running dev setup doesn't start failing.
    if (leaf.notAfter.getTime() - now.getTime() > 7 * 86_400_000) return { ...files, created: false };
  }
  ensurePrivateDir(dir);
  const day = 86_400_000;
  const gen = async () => (await webcrypto.subtle.generateKey(EC, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const [rootKeys, interKeys, leafKeys] = await Promise.all([gen(), gen(), gen()]);
  const serial = () => Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString("hex").replace(/^[89a-f]/, "1");
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=attestd dev root CA, O=attestd (development only)",
    notBefore: new Date(now.getTime() - day),
    notAfter: new Date(now.getTime() + 3650 * day),
    signingAlgorithm: SIGN,
    keys: rootKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(rootKeys.publicKey),
    ],
  });
  const inter = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: "CN=attestd dev intermediate CA, O=attestd (development only)",
    issuer: root.subject,
    notBefore: new Date(now.getTime() - day),
    notAfter: new Date(now.getTime() + 1825 * day),
    signingAlgorithm: SIGN,
    publicKey: interKeys.publicKey,
    signingKey: rootKeys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(interKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(rootKeys.publicKey),
    ],
  });
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: "CN=localhost",
    issuer: inter.subject,
    notBefore: new Date(now.getTime() - day),
    notAfter: new Date(now.getTime() + 397 * day),
    signingAlgorithm: SIGN,
    publicKey: leafKeys.publicKey,
    signingKey: interKeys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        { type: "ip", value: "127.0.0.1" },
        { type: "ip", value: "::1" },
      ]),
      await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(interKeys.publicKey),
    ],
  });
  writeFileSync(files.caFile, root.toString("pem") + "\n");
  writeFileSync(files.certFile, leaf.toString("pem") + "\n" + inter.toString("pem") + "\n");
  writePrivateFile(files.keyFile, await exportKeyPem(leafKeys.privateKey));
  return { ...files, created: true };
}
