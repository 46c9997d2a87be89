import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, jwtVerify, type JWTPayload } from "jose";
import type { GoogleServiceAccount } from "../../src/domain/playApps.ts";

/**
 * A stand-in for Google's two Play Integrity services on 127.0.0.1, as `--play-oauth-url` and `--play-api-url`
 * point to it: the OAuth 2.0 token endpoint (`/token`), which checks a JWT bearer grant's RS256 signature with the
 * service account's public key and its claims as Google does, and `decodeIntegrityToken`
 * (`/v1/{package}:decodeIntegrityToken`), which checks the bearer token and that the token is for the package in
 * the path. Test tokens are `token-for:<package>:<anything>`; the payload echoes them.
 *
 * Faults are queued per endpoint and used one per request, before the normal answer: a status (with an optional
 * body), `hang` (never answers), a redirect, or a raw 200 body.
 */
export type Fault =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { hang: true }
  | { redirect: string }
  | { body: string };

export interface GrantSeen {
  header: { alg?: string; kid?: string; typ?: string };
  claims: JWTPayload;
}

export interface GoogleStandIn {
  /** --play-oauth-url */
  oauthUrl: string;
  /** --play-api-url */
  apiUrl: string;
  /** requests that reached each endpoint (faulted ones included) */
  counts: { grants: number; decodes: number; other: number };
  /** the assertions of the grants that verified */
  grantsSeen: GrantSeen[];
  /** the access tokens issued so far */
  issued: string[];
  faults: { token: Fault[]; decode: Fault[] };
  /** `expires_in` of the next access tokens (default 3600) */
  expiresIn: number;
  /** the time the token endpoint checks `iat`/`exp` against (the test's clock) */
  now: () => number;
  /** makes every access token issued so far unknown (Google revoking them): their next use is a 401 */
  revokeAccessTokens(): void;
  /**
   * how Google opens a real token for a package (it holds the app's keys when it manages them): set by a test
   * that posts real tokens; undefined (or none set) leaves only the `token-for:{package}:{nonce}` stand-ins
   */
  openToken?: (token: string, packageName: string) => Promise<unknown>;
  /** a service account Google knows, with a key of its own */
  addAccount(email?: string, o?: { keyId?: string }): GoogleServiceAccount;
  close(): Promise<void>;
}

export async function startGooglePlayStandIn(now: () => number): Promise<GoogleStandIn> {
  const publicKeys = new Map<string, KeyObject>();
  const valid = new Set<string>();
  const hanging = new Set<ServerResponse>();
  let accounts = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const self: GoogleStandIn = {
    oauthUrl: `${base}/token`,
    apiUrl: base,
    counts: { grants: 0, decodes: 0, other: 0 },
    grantsSeen: [],
    issued: [],
    faults: { token: [], decode: [] },
    expiresIn: 3600,
    now,
    revokeAccessTokens: () => valid.clear(),
    addAccount(email = `decoder-${++accounts}@attestd-test.iam.gserviceaccount.com`, o = {}) {
      const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      publicKeys.set(email, publicKey);
      return {
        clientEmail: email,
        privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        privateKeyId: o.keyId ?? randomBytes(20).toString("hex"),
        projectId: "attestd-test",
      };
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };

  /** true when a fault answered */
  const fault = (list: Fault[], res: ServerResponse): boolean => {
    const f = list.shift();
    if (!f) return false;
    if ("hang" in f) {
      hanging.add(res);
      return true;
    }
    if ("redirect" in f) res.writeHead(302, { location: f.redirect }).end();
    else if ("status" in f) res.writeHead(f.status, { "content-type": "application/json", ...f.headers }).end(f.body ?? JSON.stringify({ error: { code: f.status, status: "FAULT" } }));
    else res.writeHead(200, { "content-type": "application/json" }).end(f.body);
    return true;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", base);

    if (req.method === "POST" && url.pathname === "/token") {
      self.counts.grants++;
      if (fault(self.faults.token, res)) return;
      if (req.headers["content-type"] !== "application/x-www-form-urlencoded") return json(res, 400, { error: "invalid_request" });
      const form = new URLSearchParams(body);
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return json(res, 400, { error: "unsupported_grant_type" });
      const assertion = form.get("assertion") ?? "";
      let seen: GrantSeen;
      try {
        const iss = decodeJwt(assertion).iss ?? "";
        const key = publicKeys.get(iss);
        if (!key) return json(res, 400, { error: "invalid_grant", error_description: "Invalid grant: account not found" });
        const { payload, protectedHeader } = await jwtVerify(assertion, key, {
          algorithms: ["RS256"],
          issuer: iss,
          audience: self.oauthUrl,
          currentDate: new Date(self.now()),
          requiredClaims: ["iat", "exp", "scope"],
        });
        // Google refuses an assertion valid for more than an hour
        if ((payload.exp ?? 0) - (payload.iat ?? 0) > 3600) return json(res, 400, { error: "invalid_grant", error_description: "Invalid JWT: lifetime" });
        if (payload.scope !== "https://www.googleapis.com/auth/playintegrity") return json(res, 400, { error: "invalid_scope" });
        seen = { header: protectedHeader as GrantSeen["header"], claims: payload };
      } catch {
        return json(res, 400, { error: "invalid_grant", error_description: "Invalid JWT Signature." });
      }
      self.grantsSeen.push(seen);
      const token = `ya29.stand-in-${randomBytes(12).toString("hex")}`;
      self.issued.push(token);
      valid.add(token);
      return json(res, 200, { access_token: token, expires_in: self.expiresIn, token_type: "Bearer" });
    }

    const decode = /^\/v1\/([^/:]+):decodeIntegrityToken$/.exec(url.pathname);
    if (req.method === "POST" && decode) {
      self.counts.decodes++;
      if (fault(self.faults.decode, res)) return;
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      if (!bearer || !valid.has(bearer)) {
        return json(res, 401, { error: { code: 401, message: "Request had invalid authentication credentials.", status: "UNAUTHENTICATED" } });
      }
      const packageName = decodeURIComponent(decode[1]!);
      let token: unknown;
      try {
        token = (JSON.parse(body) as { integrity_token?: unknown }).integrity_token;
      } catch {
        token = undefined;
      }
      const opened = typeof token === "string" && self.openToken ? await self.openToken(token, packageName) : undefined;
      if (opened !== undefined) return json(res, 200, { tokenPayloadExternal: opened });
      if (typeof token !== "string" || !token.startsWith(`token-for:${packageName}:`)) {
        return json(res, 400, { error: { code: 400, message: "Integrity token cannot be decoded due to developer error.", status: "INVALID_ARGUMENT" } });
      }
      return json(res, 200, {
        tokenPayloadExternal: {
          requestDetails: { requestPackageName: packageName, nonce: token.split(":")[2], timestampMillis: String(self.now()) },
          appIntegrity: { appRecognitionVerdict: "PLAY_RECOGNIZED", packageName },
          deviceIntegrity: { deviceRecognitionVerdict: ["MEETS_DEVICE_INTEGRITY"] },
        },
      });
    }

    self.counts.other++;
    json(res, 404, { error: { code: 404, status: "NOT_FOUND" } });
  }

  return self;
}
