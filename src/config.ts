import { readFileSync } from "node:fs";
import { fileProblem, OperatorError, pathMessage } from "./errors/operatorError.ts";
import { AUDIENCE } from "./domain/enrollment.ts";
import { LOG_FORMATS } from "./logging.ts";
import { EAR_ALGORITHMS } from "./domain/signingKeys.ts";
import { AEAD_CIPHERS, TLS_MIN_VERSIONS } from "./tls/tlsPolicy.ts";
import { otlpHeadersProblem } from "./tracing/otlpHeaders.ts";
import { allowHostProblem } from "./net/webhookTarget.ts";

/**
 * One table of settings. Each becomes a CLI flag (`--nonce-ttl`), an environment variable (`ATTESTD_NONCE_TTL`) and
 * a key of the optional JSON config file (`"nonceTtl"`); flags win over env, env over the file, the file over the
 * default. Unknown config-file keys and malformed values stop start-up with a message naming the setting.
 */
type Kind = "string" | "int" | "number" | "bool" | "list";

interface Setting<K extends Kind = Kind> {
  kind: K;
  default?: unknown;
  help: string;
  choices?: readonly string[];
  min?: number;
  max?: number;
}

function s<K extends Kind, E extends Omit<Setting<K>, "kind" | "help"> = {}>(
  kind: K,
  help: string,
  extra?: E,
): { kind: K; help: string } & E {
  return { kind, help, ...(extra as E) };
}

export const settings = {
  host: s("string", "address to listen on", { default: "127.0.0.1" }),
  port: s("int", "port to listen on", { default: 8443, min: 0, max: 65535 }),
  dataDir: s("string", "directory for the SQLite file, the secrets key, dev TLS material and trust caches (made 0700)", { default: "./data" }),
  secretsKeyFile: s("string", "file of the AES-256-GCM key that seals secrets in the store (tenants' private keys); every instance and store command on one store needs the same. Default: secrets.key in the data dir, made 0600 on first start"),
  allowNewStore: s("bool", "start although attestd.sqlite is missing or empty in a data dir that was used before (it holds secrets.key or an android-trust cache): a new, empty store (docs/deployment.md, \"A missing or empty database file\")"),
  store: s("string", "durable store backend", { default: "sqlite", choices: ["sqlite", "postgres"] }),
  databaseUrl: s("string", "PostgreSQL URL (with --store postgres)"),
  redisUrl: s("string", "Redis URL for shared nonces, rate limits and jti replay"),
  pgPoolMax: s("int", "PostgreSQL connection pool size per process", { default: 10, min: 1, max: 1000 }),
  sqliteSynchronous: s("string", "SQLite durability: NORMAL survives crashes, FULL also power loss", {
    default: "NORMAL",
    choices: ["NORMAL", "FULL"],
  }),
  sqliteLockWaitMs: s(
    "int",
    "ms a request waits for another process's lock on the SQLite file (an attestd command, a --workers sibling) before 503 with Retry-After; the wait never blocks other requests",
    { default: 2000, min: 0, max: 60_000 },
  ),
  shutdownGraceMs: s("int", "ms a SIGTERM/SIGINT shutdown may take (in-flight requests finish, the activity log is written, the stores close) before the process exits 1 regardless; keep it below the orchestrator's own (Kubernetes: 30 s)", {
    default: 25_000,
    min: 100,
    max: 600_000,
  }),
  workers: s("int", "worker processes (node:cluster); 1 runs in-process", { default: 1, min: 1, max: 64 }),
  tlsCert: s("string", "PEM file with the server certificate and its intermediates (leaf first)"),
  tlsKey: s("string", "PEM file with the server private key"),
  tlsMinVersion: s("string", "lowest TLS version the server accepts", { default: "TLSv1.2", choices: TLS_MIN_VERSIONS }),
  tlsCiphers: s("string", "OpenSSL cipher suites the server offers, colon-separated, TLS 1.3 (TLS_*) and 1.2 alike; the default is AEAD suites with forward secrecy only", {
    default: AEAD_CIPHERS,
  }),
  devTls: s("bool", "generate and use a local dev CA + leaf in the data dir (default when no cert is given)"),
  insecureHttp: s("bool", "serve plain HTTP (only behind a TLS-terminating proxy)"),
  publicUrl: s("string", "the URL people reach the service at: the links `user invite` prints, and the origin passkeys are bound to (default https://HOST:PORT, with localhost for a loopback or wildcard HOST)"),
  portalIdleTimeout: s("int", "seconds a portal session lives without a request (ends up to a minute early: docs/portal.md)", { default: 1800, min: 1, max: 86_400 }),
  portalSessionLifetime: s("int", "seconds a portal session lives at most after sign-in, however busy", { default: 43_200, min: 1, max: 30 * 86_400 }),
  apiDocs: s("bool", "serve the API browser (Swagger UI) at /docs, with its own strict CSP; false: /docs is 404 (GET /openapi.json is served either way)", { default: true }),
  trustedProxies: s("list", "proxy addresses/CIDRs whose X-Forwarded-For is trusted (comma-separated)", {
    default: [],
  }),
  // slow and greedy clients (src/http/connectionLimits.ts, docs/reliability.md)
  headersTimeoutMs: s("int", "ms a client has to send a request's headers (408 after it; 0: off)", { default: 10_000, min: 0, max: 600_000 }),
  requestTimeoutMs: s("int", "ms a client has to send a whole request, body included (408 after it; 0: off)", { default: 30_000, min: 0, max: 3_600_000 }),
  idleTimeoutMs: s("int", "ms a connection may carry no data either way, mid-request included, before it is closed (0: off)", { default: 120_000, min: 0, max: 3_600_000 }),
  keepAliveTimeoutMs: s("int", "ms an idle kept-alive connection is held open for the client's next request (above a load balancer's own idle timeout)", { default: 65_000, min: 1, max: 3_600_000 }),
  maxConnectionsPerAddress: s("int", "open connections one client address may hold per serving process, more are closed at once (the trusted proxies are exempt; 0: no cap)", { default: 256, min: 0, max: 1_000_000 }),
  vendorRoots: s("string", "PEM bundle of trusted vendor root certificates"),
  referenceValues: s("string", "JSON file of reference values (model, firmwareVersion, measurements)"),
  revocations: s("string", "vendor revocation list (Google status-list JSON shape)"),
  androidRoots: s("string", "Google attestation roots: file or URL, roots JSON or PEM bundle; replaces the roots built into attestd"),
  appAttestRoots: s("string", "PEM bundle of App Attestation root certificates (a local file); replaces Apple's App Attestation Root CA built into attestd"),
  androidStatus: s("string", "Google attestation status list: file or URL; fetched, cached in the data dir and refreshed", {
    default: "https://android.googleapis.com/attestation/status",
  }),
  allowedBootKeys: s("string", "JSON allow-list of verified-boot keys for SelfSigned devices"),
  androidMaxAge: s("int", "seconds after which cached Android roots/status are stale and appraisal fails closed", {
    default: 7 * 24 * 3600,
    min: 60,
  }),
  androidRefresh: s("int", "seconds between refreshes of Android roots/status from their files or URLs", {
    default: 3600,
    min: 10,
  }),
  androidMaxShrink: s(
    "int",
    "percent of its entries (or certificates) a newly read Android status list (or roots) may lose against the copy in force; one that loses more, or is empty, is held back and the copy in force stays (100: accept any)",
    { default: 50, min: 0, max: 100 },
  ),
  androidMinPatchLevel: s("int", "minimum Android OS patch level (YYYYMM or YYYYMMDD) for a Yes verdict"),
  androidPolicy: s("string", "JSON android-key policy: a default under every tenant's stored policy, and per-tenant sections that seed a tenant's stored policy (version 1) once, when it has none (docs/policy.md, docs/android-key.md)"),
  // Google-side decoding of Play Integrity tokens (src/services/playIntegrityDecoder.ts, docs/play-integrity.md)
  playOauthUrl: s("string", "Google's OAuth 2.0 token endpoint, where a service account's signed JWT is exchanged for an access token to Play Integrity decoding; https, or http to a loopback address only (a local stand-in)", {
    default: "https://oauth2.googleapis.com/token",
  }),
  playApiUrl: s("string", "base URL of Google's Play Integrity API (decodeIntegrityToken); https, or http to a loopback address only (a local stand-in)", {
    default: "https://playintegrity.googleapis.com",
  }),
  playDecodeTimeoutMs: s("int", "ms one request to Google's token endpoint or decodeIntegrityToken may take, answer and body together, before it counts as a failed attempt", {
    default: 5000,
    min: 100,
    max: 60_000,
  }),
  playDecodeRetries: s("int", "further attempts after a request to Google fails for the network, a timeout, 429 or 5xx (never for another 4xx), with a pause doubling from 200 ms; then the token is not opened (fails closed)", {
    default: 2,
    min: 0,
    max: 5,
  }),
  playThreads: s("string", "threads that open Play Integrity tokens with apps' response keys (decrypt + verify) and check App Attest assertions' signatures off the event loop: a number from 0 (on the event loop) to 16, or auto (of each process's share of the cores, one per core beyond the first, at most 4)", {
    default: "auto",
  }),
  // App Attest receipt refresh (src/services/appAttestReceiptRefresher.ts, docs/app-attest.md#receipts-and-the-fraud-risk-metric)
  appAttestReceiptUrl: s("string", "base URL of Apple's App Attest receipt service for keys attested in production (POST {base}/v1/attestationData), where a key's receipt is refreshed to read the fraud-risk metric; https, or http to a loopback address only (a local stand-in)", {
    default: "https://data.appattest.apple.com",
  }),
  appAttestReceiptDevelopmentUrl: s("string", "base URL of Apple's App Attest receipt service for keys attested in development; https, or http to a loopback address only (a local stand-in)", {
    default: "https://data-development.appattest.apple.com",
  }),
  appAttestReceiptTimeoutMs: s("int", "ms one request to Apple's App Attest receipt service may take, answer and body together, before it counts as a failed attempt", {
    default: 5000,
    min: 100,
    max: 60_000,
  }),
  appAttestReceiptRetries: s("int", "further attempts after a receipt refresh fails for the network, a timeout, 429 or 5xx (never for another 4xx), with a pause doubling from 200 ms; then the receipt is not refreshed (no verdict depends on it)", {
    default: 2,
    min: 0,
    max: 5,
  }),
  earAlg: s("string", "signature algorithm of new result-signing keys (EAR), made on first start and by `attestd keys rotate`", {
    default: "ES256",
    choices: EAR_ALGORITHMS,
  }),
  earKeyGrace: s("int", "seconds a rotated-out result-signing key stays published in /.well-known/jwks.json (`attestd keys rotate`)", {
    default: 7 * 24 * 3600,
    min: 300,
  }),
  earKeyRefresh: s("int", "seconds between a server's re-reads of the result-signing keys: a rotation reaches every instance within it", {
    default: 10,
    min: 1,
    max: 300,
  }),
  nonceTtl: s("int", "seconds a nonce stays valid", { default: 300, min: 1, max: 86_400 }),
  nonceRetain: s("int", "seconds a used/expired nonce is remembered after expiry", { default: 86_400, min: 0 }),
  maxOutstandingNonces: s("int", "unused, unexpired nonces allowed per tenant", { default: 100_000, min: 1 }),
  maxBlobBytes: s("int", "largest accepted blob", { default: 65_536, min: 1, max: 16 * 1024 * 1024 }),
  maxBatch: s("int", "largest batch in POST /api/v1/transaction", { default: 100, min: 1, max: 10_000 }),
  rps: s("number", "default requests/s per API key", { default: 50, min: 0.001 }),
  burst: s("int", "default burst per API key", { default: 100, min: 1 }),
  maxDevices: s("int", "largest device list in one enrollment request", { default: 1000, min: 1 }),
  tokenAudience: s("list", "accepted `aud` values of Part B's client JWTs (comma-separated); add KnoxWSM to admit clients built on Samsung's Knox token libraries unchanged", {
    default: [AUDIENCE],
  }),
  // OpenTelemetry traces (src/tracing/, docs/traces.md): off unless an endpoint is given
  otlpEndpoint: s("string", "OTLP/HTTP collector to export traces to (http://collector:4318; /v1/traces is added unless the path ends with it); https, or http to a loopback address only. Unset: no tracing, and the OpenTelemetry SDK is not loaded"),
  otlpHeaders: s("string", "headers sent with every trace export, name=value pairs separated by commas, values percent-encoded (a collector's API key: never logged)"),
  traceSampleRatio: s("number", "share of requests without a sampled caller whose traces are kept, 0 to 1; a caller's traceparent decides for its own requests (parent-based)", { default: 1, min: 0, max: 1 }),
  serviceName: s("string", "service.name of the exported traces (one name per deployment, its instances told apart by host)", { default: "attestd" }),
  // Single sign-on for the portal through OpenID Connect (src/portal/sso.ts, docs/sso.md): off unless an issuer is given
  ssoIssuer: s("string", "issuer URL of the OpenID Connect provider the portal signs people in with (its /.well-known/openid-configuration is read); https. Unset: no single sign-on"),
  ssoClientId: s("string", "the portal's client id at the provider (needed with --sso-issuer)"),
  ssoClientSecretFile: s("string", "file holding the client secret (needed with --sso-issuer; never a flag value, so it stays out of process lists and shell history)"),
  ssoRedirectUrl: s("string", "the redirect URL registered at the provider (default: the public URL's /portal/sso/callback)"),
  ssoScopes: s("list", "scopes asked for (comma-separated); openid is always among them", { default: ["openid", "email", "profile"] }),
  ssoName: s("string", "the provider's name on the sign-in page's button (Sign in with NAME)", { default: "single sign-on" }),
  ssoTenantClaim: s("string", "ID token claim naming a person's tenant (by tenant name), for mapping by claims; with --sso-role-claim"),
  ssoTenants: s("list", "the tenant names --sso-tenant-claim may name (comma-separated; default: any tenant)"),
  ssoRoleClaim: s("string", "ID token claim holding a person's role or groups (a string or an array of strings), for mapping by claims; with --sso-tenant-claim"),
  ssoAdminValues: s("list", "values of --sso-role-claim that make a tenant admin (comma-separated)", { default: [] }),
  ssoViewerValues: s("list", "values of --sso-role-claim that make a tenant viewer (comma-separated)", { default: [] }),
  ssoAllowHttpLoopback: s("bool", "accept an http issuer on a loopback address (a provider run by tests or on this machine); never for a real deployment", { default: false }),
  logLevel: s("string", "pino log level", {
    default: "info",
    choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
  }),
  logFormat: s("string", "log lines: pretty for a person, json (one object per line) for a collector; auto is pretty when stdout is a terminal", {
    default: "auto",
    choices: LOG_FORMATS,
  }),
  webhookAllowPrivate: s("bool", "let webhook endpoints be loopback, private, link-local, unique-local or metadata addresses (an operator's own network, tests); off, they are refused at registration and after DNS resolution at every delivery (docs/events.md)"),
  webhookAllowHosts: s("list", "webhook hosts (exact names) or CIDRs allowed although private, without --webhook-allow-private (comma-separated)", { default: [] }),
  webhookAllowHttp: s("bool", "let webhook endpoints be plain http:// URLs; off, https is required"),
  webhookTimeoutMs: s("int", "ms one webhook delivery attempt may take (connection, answer) before it counts as failed and is retried", { default: 10_000, min: 100, max: 60_000 }),
  webhookRetryPeriod: s("int", "seconds a webhook delivery is retried after its event (or a resend) before it is failed", { default: 259_200, min: 60, max: 2_592_000 }),
  webhookRetryBaseMs: s("int", "ms before a webhook delivery's first retry; each later pause doubles (with ±20 % jitter)", { default: 5_000, min: 10, max: 3_600_000 }),
  webhookRetryMaxMs: s("int", "longest pause between two attempts of a webhook delivery, in ms", { default: 3_600_000, min: 100, max: 86_400_000 }),
  webhookPollMs: s("int", "ms between looks at the webhook outbox when it had nothing due", { default: 1_000, min: 10, max: 60_000 }),
  webhookHistoryDays: s("int", "days a delivered or failed webhook delivery (and its attempts) stays listed before it is deleted", { default: 30, min: 1, max: 3650 }),
  // the audit trail streamed for a SIEM (issue 26; docs/audit.md): serve and every command that changes state
  auditFile: s("string", "file every audit record is also appended to, one JSON line each (made 0600); a write that fails never fails the change: it is counted in attestd_audit_stream_failures_total and logged"),
  auditSyslog: s("string", "syslog receiver every audit record is also sent to as one RFC 5424 line (facility log audit): udp://HOST:PORT, or a unix stream socket path; never waited for, failures counted and logged as for --audit-file"),
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof settings;

type ValueOf<K extends Kind> = K extends "string"
  ? string
  : K extends "int" | "number"
    ? number
    : K extends "bool"
      ? boolean
      : string[];

export type Config = {
  [N in SettingName]: (typeof settings)[N] extends { default: unknown }
    ? ValueOf<(typeof settings)[N]["kind"]>
    : ValueOf<(typeof settings)[N]["kind"]> | undefined;
};

/**
 * Where people reach the service (--public-url, without a trailing slash): the base of the links `user invite`
 * prints and, as an origin, what passkeys are bound to. Without one, this host and port over HTTPS; a loopback or
 * wildcard listen address becomes `localhost`, which the dev certificate names and which, unlike an IP address, a
 * browser accepts as a WebAuthn relying party.
 */
export function publicBaseUrl(c: Pick<Config, "publicUrl" | "host" | "port">): string {
  if (c.publicUrl) return c.publicUrl.replace(/\/+$/, "");
  const local = ["127.0.0.1", "::1", "0.0.0.0", "::", "localhost"].includes(c.host);
  const host = local ? "localhost" : c.host.includes(":") ? `[${c.host}]` : c.host;
  return new URL(`https://${host}:${c.port}`).origin;
}

/**
 * Why a URL attestd sends credentials to is unusable, or undefined: it must be https, except to a loopback host,
 * where http serves a local stand-in (tests, a development proxy) and nothing crosses a network in the clear.
 */
export function outboundUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not a URL";
  }
  if (url.username || url.password) return "must not carry a user or password";
  if (url.protocol === "https:") return undefined;
  const loopback = ["localhost", "[::1]"].includes(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol === "http:" && loopback) return undefined;
  return "must be an https URL (http only to a loopback address)";
}

export function flagName(name: string): string {
  return name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
}

export function envName(name: string): string {
  return "ATTESTD_" + flagName(name).replace(/-/g, "_").toUpperCase();
}

export class ConfigError extends OperatorError {}

const MAX_AUDIENCE_LENGTH = 128;

function coerce(name: string, setting: Setting, raw: unknown, source: string): unknown {
  const fail = (why: string) => new ConfigError(`${source}: ${flagName(name)} ${why}`);
  let v: unknown = raw;
  switch (setting.kind) {
    case "string":
      if (typeof v !== "string" || v === "") throw fail("must be a non-empty string");
      if (setting.choices && !setting.choices.includes(v)) throw fail(`must be one of ${setting.choices.join(", ")}`);
      return v;
    case "int":
    case "number": {
      if (typeof v === "string" && v.trim() !== "") v = Number(v);
      if (typeof v !== "number" || !Number.isFinite(v)) throw fail("must be a number");
      if (setting.kind === "int" && !Number.isInteger(v)) throw fail("must be an integer");
      if (setting.min !== undefined && v < setting.min) throw fail(`must be at least ${setting.min}`);
      if (setting.max !== undefined && v > setting.max) throw fail(`must be at most ${setting.max}`);
      return v;
    }
    case "bool":
      if (typeof v === "boolean") return v;
      if (v === "true" || v === "1") return true;
      if (v === "false" || v === "0") return false;
      throw fail("must be true or false");
    case "list":
      if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v;
      if (typeof v === "string") return v.split(",").map((x) => x.trim()).filter(Boolean);
      throw fail("must be a comma-separated list");
  }
}

/**
 * Resolves the configuration. `flags` holds only flags the user gave (camelCase keys); `env` defaults to
 * process.env; `configFile` is the path from --config / ATTESTD_CONFIG.
 */
export function loadConfig(
  flags: Partial<Record<string, unknown>>,
  env: NodeJS.ProcessEnv = process.env,
  configFile: string | undefined = (flags.config as string | undefined) ?? env.ATTESTD_CONFIG,
): Config {
  let file: Record<string, unknown> = {};
  if (configFile) {
    const where = flags.config !== undefined ? "--config FILE" : "ATTESTD_CONFIG";
    const expected = "a JSON object of settings, keys as in docs/configuration.md";
    let text: string;
    try {
      text = readFileSync(configFile, "utf8");
    } catch (e) {
      throw new ConfigError(pathMessage(where, configFile, fileProblem(e), expected));
    }
    try {
      file = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not the parser's words: they quote the file, which may hold secrets (a database URL)
      throw new ConfigError(pathMessage(where, configFile, "not JSON", expected));
    }
    if (typeof file !== "object" || file === null || Array.isArray(file)) {
      throw new ConfigError(`config file ${configFile}: expected a JSON object`);
    }
    for (const key of Object.keys(file)) {
      if (!(key in settings)) throw new ConfigError(`config file ${configFile}: unknown setting "${key}"`);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings) as [SettingName, Setting][]) {
    const fromFlag = flags[name];
    const fromEnv = env[envName(name)];
    const fromFile = file[name];
    if (fromFlag !== undefined) out[name] = coerce(name, setting, fromFlag, "flag");
    else if (fromEnv !== undefined && fromEnv !== "") out[name] = coerce(name, setting, fromEnv, envName(name));
    else if (fromFile !== undefined) out[name] = coerce(name, setting, fromFile, `config file ${configFile}`);
    else out[name] = setting.default;
  }
  const c = out as Config;
  if (c.store === "postgres" && !c.databaseUrl) throw new ConfigError("--store postgres needs --database-url");
  if (c.insecureHttp && (c.tlsCert || c.devTls)) {
    throw new ConfigError("--insecure-http cannot be combined with --tls-cert or --dev-tls");
  }
  if (Boolean(c.tlsCert) !== Boolean(c.tlsKey)) throw new ConfigError("--tls-cert and --tls-key go together");
  if (c.requestTimeoutMs > 0 && c.headersTimeoutMs > c.requestTimeoutMs) {
    throw new ConfigError("--headers-timeout-ms must not exceed --request-timeout-ms: the headers are part of the request");
  }
  if (c.tokenAudience.length === 0 || c.tokenAudience.some((a) => a.length > MAX_AUDIENCE_LENGTH)) {
    throw new ConfigError(`--token-audience needs at least one audience of 1..${MAX_AUDIENCE_LENGTH} characters`);
  }
  if (c.publicUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(c.publicUrl);
    } catch {
      url = undefined;
    }
    if (!url || !["https:", "http:"].includes(url.protocol)) throw new ConfigError(`--public-url ${c.publicUrl} is not an http(s) URL`);
  }
  for (const [name, value] of [
    ["--play-oauth-url", c.playOauthUrl],
    ["--play-api-url", c.playApiUrl],
    ["--app-attest-receipt-url", c.appAttestReceiptUrl],
    ["--app-attest-receipt-development-url", c.appAttestReceiptDevelopmentUrl],
  ] as const) {
    const why = outboundUrlProblem(value);
    // a URL with a password is not repeated into a log or a terminal
    if (why) throw new ConfigError(`${name} ${why.startsWith("must not carry") ? "" : `${value} `}${why}`);
  }
  if (c.otlpEndpoint !== undefined) {
    const why = outboundUrlProblem(c.otlpEndpoint);
    if (why) throw new ConfigError(`--otlp-endpoint ${why.startsWith("must not carry") ? "" : `${c.otlpEndpoint} `}${why}`);
  }
  if (c.otlpHeaders !== undefined) {
    // the value is a credential: the message names the problem, never the value
    const why = otlpHeadersProblem(c.otlpHeaders);
    if (why) throw new ConfigError(`--otlp-headers ${why}`);
  }
  if (c.playThreads !== "auto" && !(/^\d{1,2}$/.test(c.playThreads) && Number(c.playThreads) <= 16)) {
    throw new ConfigError(`--play-threads ${c.playThreads}: expected auto or a number from 0 to 16`);
  }
  for (const entry of c.webhookAllowHosts) {
    const why = allowHostProblem(entry);
    if (why) throw new ConfigError(`--webhook-allow-hosts: ${why}`);
  }
  const sso = ssoConfigProblem(c);
  if (sso) throw new ConfigError(sso);
  if (c.portalIdleTimeout > c.portalSessionLifetime) {
    throw new ConfigError("--portal-idle-timeout cannot be longer than --portal-session-lifetime");
  }
  return c;
}

/** What is wrong with the single sign-on settings, if anything (docs/sso.md). */
function ssoConfigProblem(c: Config): string | undefined {
  const claims = c.ssoTenantClaim !== undefined || c.ssoRoleClaim !== undefined;
  if (c.ssoIssuer === undefined) {
    if (c.ssoClientId !== undefined || c.ssoClientSecretFile !== undefined || claims) return "the --sso-* settings need --sso-issuer";
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(c.ssoIssuer);
  } catch {
    return `--sso-issuer ${c.ssoIssuer} is not a URL`;
  }
  if (url.username || url.password) return "--sso-issuer must not carry a user or password";
  const loopback = ["localhost", "[::1]"].includes(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback && c.ssoAllowHttpLoopback)) {
    return `--sso-issuer ${c.ssoIssuer} must be an https URL (http only to a loopback address, with --sso-allow-http-loopback)`;
  }
  if (c.ssoClientId === undefined) return "--sso-issuer needs --sso-client-id";
  if (c.ssoClientSecretFile === undefined) return "--sso-issuer needs --sso-client-secret-file";
  if (c.ssoRedirectUrl !== undefined && !/^https?:\/\//.test(c.ssoRedirectUrl)) return `--sso-redirect-url ${c.ssoRedirectUrl} is not an http(s) URL`;
  if ((c.ssoTenantClaim === undefined) !== (c.ssoRoleClaim === undefined)) return "--sso-tenant-claim and --sso-role-claim go together";
  if (c.ssoRoleClaim !== undefined && c.ssoAdminValues.length + c.ssoViewerValues.length === 0) {
    return "--sso-role-claim needs --sso-admin-values or --sso-viewer-values: the values that make an admin or a viewer";
  }
  const both = c.ssoAdminValues.find((v) => c.ssoViewerValues.includes(v));
  if (both !== undefined) return `"${both}" is in both --sso-admin-values and --sso-viewer-values`;
  return undefined;
}
