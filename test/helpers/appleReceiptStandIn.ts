import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import { openAppAttestReceipt } from "../../src/attestation/encoding/appAttestReceipt.ts";
import { encodeReceiptContent, signAppAttestReceipt, type ReceiptSigningCa } from "../../src/attestation/sim/appAttestReceipt.ts";
import type { AppleDeveloperKey } from "../../src/services/appAttestReceiptRefresher.ts";

/**
 * A stand-in for Apple's App Attest receipt service on 127.0.0.1, as `--app-attest-receipt-url` (and the
 * development one) point to it: `POST {base}/{any prefix}/v1/attestationData` takes a base64 receipt and an
 * `Authorization` header holding a developer JWT, checks the JWT (ES256 with the key `kid` names, `iss` its team,
 * `iat` within the hour) as Apple does, opens the receipt with the test CA's root, and answers with a new receipt
 * of type RECEIPT for the same app and credential certificate, signed by the test CA, carrying `riskMetric` and a
 * not-before a day on; before the sent receipt's own not-before it answers 304, as Apple does.
 *
 * Faults are queued and used one per request, before the normal answer: a status (with an optional body and
 * headers), `hang` (never answers), a redirect, or a raw 200 body.
 */
export type ReceiptFault =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { hang: true }
  | { redirect: string }
  | { body: string };

export interface RequestSeen {
  /** the path's prefix before /v1/attestationData ("/production", "/development") */
  prefix: string;
  authorization: string;
  header?: { alg?: string; kid?: string };
  claims?: JWTPayload;
}

export interface AppleReceiptStandIn {
  /** the server's base; tests add a prefix per environment */
  base: string;
  /** the risk metric of the next receipts */
  riskMetric: number;
  /** sign answers with this CA instead of the trusted one (a forged answer) */
  signWith?: ReceiptSigningCa;
  /** answer for this certificate instead of the one in the sent receipt */
  answerForCertificate?: Uint8Array;
  faults: ReceiptFault[];
  /** every request that reached the endpoint, faulted ones included */
  seen: RequestSeen[];
  /** a developer key Apple knows */
  addDeveloperKey(teamId?: string): AppleDeveloperKey;
  close(): Promise<void>;
}

export async function startAppleReceiptStandIn(ca: ReceiptSigningCa, now: () => number): Promise<AppleReceiptStandIn> {
  const publicKeys = new Map<string, { key: KeyObject; teamId: string }>();
  const hanging = new Set<ServerResponse>();
  let teams = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const self: AppleReceiptStandIn = {
    base,
    riskMetric: 1,
    faults: [],
    seen: [],
    addDeveloperKey(teamId = `TEAM${String(++teams).padStart(6, "0")}`) {
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const keyId = randomBytes(5).toString("hex").toUpperCase();
      publicKeys.set(keyId, { key: publicKey, teamId });
      return { teamId, keyId, privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const fault = (res: ServerResponse): boolean => {
    const f = self.faults.shift();
    if (!f) return false;
    if ("hang" in f) {
      hanging.add(res);
      return true;
    }
    if ("redirect" in f) res.writeHead(302, { location: f.redirect }).end();
    else if ("status" in f) res.writeHead(f.status, { "content-type": "text/plain", ...f.headers }).end(f.body ?? "");
    else res.writeHead(200, { "content-type": "application/octet-stream" }).end(f.body);
    return true;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("latin1");
    const path = /^(.*)\/v1\/attestationData$/.exec(new URL(req.url ?? "/", base).pathname);
    if (req.method !== "POST" || !path) return void res.writeHead(404).end();
    const authorization = req.headers.authorization ?? "";
    const seen: RequestSeen = { prefix: path[1]!, authorization };
    self.seen.push(seen);
    if (fault(res)) return;

    try {
      const header = decodeProtectedHeader(authorization);
      const known = publicKeys.get(header.kid ?? "");
      if (!known) return void res.writeHead(401).end("unknown key");
      const { payload } = await jwtVerify(authorization, known.key, { algorithms: ["ES256"], issuer: known.teamId, currentDate: new Date(now()), requiredClaims: ["iat"] });
      if (Math.abs(now() / 1000 - (payload.iat ?? 0)) > 3600) return void res.writeHead(401).end("stale token");
      seen.header = header as RequestSeen["header"];
      seen.claims = payload;
    } catch {
      return void res.writeHead(401).end("bad token");
    }

    const sent = openAppAttestReceipt(new Uint8Array(Buffer.from(body, "base64")), { at: new Date(now()), roots: [ca.root.certDer] });
    if (!sent.ok) return void res.writeHead(400).end("bad receipt");
    if (sent.receipt.notBefore && sent.receipt.notBefore.getTime() > now()) return void res.writeHead(304).end();
    const content = encodeReceiptContent({
      type: "RECEIPT",
      appId: sent.receipt.appId,
      attestedCertificate: self.answerForCertificate ?? sent.receipt.attestedCertificate,
      clientHash: sent.receipt.clientHash,
      ...(sent.receipt.environment ? { environment: sent.receipt.environment } : {}),
      createdAt: new Date(now()),
      notBefore: new Date(now() + 86_400_000),
      expiresAt: new Date(now() + 90 * 86_400_000),
      riskMetric: self.riskMetric,
    });
    const answer = signAppAttestReceipt(self.signWith ?? ca, content);
    res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from(answer).toString("base64"));
  }

  return self;
}
