import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, decodeJwt, type JWK } from "jose";
import Provider from "oidc-provider";

/** A person the test provider signs in: their subject and the claims it gives about them. */
export interface TestAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  /** custom claims for mapping by claims */
  tenant?: string;
  groups?: string[];
}

/** How the next token response's ID token is altered (re-signed with the provider's own key), or not. */
export type Tamper = { aud?: string; exp?: number; iss?: string; nonce?: string; signedByAnotherKey?: boolean } | undefined;

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** who the interaction signs in next */
  signInAs(account: TestAccount): void;
  /** the next ID tokens are re-signed with these claims changed, until set back to undefined */
  tamper(t: Tamper): void;
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider (panva's oidc-provider, the certified implementation) on 127.0.0.1, with one
 * confidential client whose redirect URL is attestd's, PKCE required, and an interaction that signs in the account
 * the test names (no login form): everything else, discovery, authorization, codes, the token endpoint, ID token
 * signing and the JWKS, is the library's own. `tamper` re-signs the ID token of a token response with the provider's
 * key and other claims, to show that attestd checks the audience, expiry, issuer and nonce, not only the signature;
 * or with a key the provider never published, to show that the signature is checked.
 */
export async function startOidcProvider(o: { redirectUri: string; clientId?: string; clientSecret?: string }): Promise<TestOidcProvider> {
  const clientId = o.clientId ?? "attestd-portal";
  const clientSecret = o.clientSecret ?? "a client secret of the test provider, long enough";
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  // a key of the same id that the provider never published: what a forger would sign with
  const { privateKey: foreignKey } = await generateKeyPair("RS256");
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: "test-key", alg: "RS256", use: "sig" };
  const accounts = new Map<string, TestAccount>();
  let next: TestAccount | undefined;
  let tamper: Tamper;

  let provider: Provider | undefined;
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith("/interaction/")) {
      void interact(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    provider!.callback()(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [o.redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_post",
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ["the test provider's cookie key"] },
    // the claims go into the ID token (not only userinfo), where attestd reads them
    conformIdTokenClaims: false,
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], attestd: ["tenant", "groups"] },
    scopes: ["openid", "email", "profile", "attestd"],
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx, sub) {
      const a = accounts.get(sub);
      if (!a) return undefined;
      return {
        accountId: sub,
        async claims() {
          return { ...a };
        },
      };
    },
  });
  provider.use(async (ctx, nextMw) => {
    await nextMw();
    const body = ctx.body as { id_token?: string } | undefined;
    if (tamper && ctx.path === "/token" && body && typeof body.id_token === "string") {
      const { signedByAnotherKey, ...changed } = tamper;
      const claims = { ...decodeJwt(body.id_token), ...changed };
      body.id_token = await new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "test-key" }).sign(signedByAnotherKey ? foreignKey : privateKey);
    }
  });

  async function interact(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): Promise<void> {
    const p = provider!;
    const details = await p.interactionDetails(req, res);
    if (!next) throw new Error("the test named nobody to sign in (signInAs)");
    const account = next;
    accounts.set(account.sub, account);
    const grant = new p.Grant({ accountId: account.sub, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope));
    const grantId = await grant.save();
    await p.interactionFinished(req, res, { login: { accountId: account.sub }, consent: { grantId } }, { mergeWithLastSubmission: false });
  }

  return {
    issuer,
    clientId,
    clientSecret,
    signInAs(a) {
      next = a;
    },
    tamper(t) {
      tamper = t;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A browser's part at the provider: follows its redirects with the provider's cookies kept, from the authorization
 * URL to the redirect back to attestd, whose URL it returns (not followed: the caller hands it to attestd).
 */
export async function throughProvider(authorizationUrl: string, redirectPrefix: string): Promise<URL> {
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  for (let hops = 0; hops < 10; hops++) {
    if (url.startsWith(redirectPrefix)) return new URL(url);
    const res = await fetch(url, { redirect: "manual", headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = res.headers.get("location");
    if (!location) throw new Error(`the provider answered ${res.status} at ${url} without a redirect: ${(await res.text()).slice(0, 300)}`);
    url = new URL(location, url).href;
  }
  throw new Error("too many redirects at the provider");
}
