import { generateKeyPairSync, randomBytes } from "node:crypto";

/**
 * What a tenant pastes or uploads when it registers a Play app, made fresh: the Play Console's two response keys
 * (base64, as the console shows them) and a Google service-account key file. The tests look for these exact texts
 * in every answer and stored row, so each call gives new ones.
 */
export function responseKeys(): { decryptionKey: string; verificationKey: string } {
  const { publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return {
    decryptionKey: randomBytes(32).toString("base64"),
    verificationKey: publicKey.export({ format: "der", type: "spki" }).toString("base64"),
  };
}

/** a service-account key file's text, as Google Cloud writes it (PKCS#8 PEM private key) */
export function serviceAccountFile(email = "attest@demo-project.iam.gserviceaccount.com"): { text: string; privateKeyPem: string } {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const privateKeyPem = privateKey.export({ format: "pem", type: "pkcs8" }) as string;
  const text = JSON.stringify({
    type: "service_account",
    project_id: "demo-project",
    private_key_id: randomBytes(20).toString("hex"),
    private_key: privateKeyPem,
    client_email: email,
    client_id: "1234567890",
    auth_uri: "https://accounts.google.com/o/oauth2/auth",
    token_uri: "https://oauth2.googleapis.com/token",
  });
  return { text, privateKeyPem };
}

/** the base64 of a key's bytes, the way the secret may appear in a body or a row */
export const secretTexts = (keys: { decryptionKey: string; verificationKey: string }): string[] => [keys.decryptionKey, keys.verificationKey];
