import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { Command } from "commander";
import { addSettings, configFrom } from "../src/cli/options.ts";
import { ConfigError, envName, loadConfig } from "../src/config.ts";

describe("configuration", () => {
  const file = (obj: unknown) => {
    const f = path.join(mkdtempSync(path.join(tmpdir(), "attestd-cfg-")), "c.json");
    writeFileSync(f, JSON.stringify(obj));
    return f;
  };

  it("defaults match operator.md", () => {
    const c = loadConfig({}, {});
    assert.equal(c.host, "127.0.0.1");
    assert.equal(c.port, 8443);
    assert.equal(c.dataDir, "./data");
    assert.equal(c.store, "sqlite");
    assert.equal(c.nonceTtl, 300);
    assert.equal(c.maxBlobBytes, 65536);
    assert.equal(c.rps, 50);
    assert.equal(c.burst, 100);
  });

  it("a bool flag alone is true, and takes true or false after it: --api-docs false turns /docs off", () => {
    const parse = (...args: string[]) => configFrom(addSettings(new Command().exitOverride(), ["apiDocs", "insecureHttp"]).parse(args, { from: "user" }));
    assert.equal(parse().apiDocs, true, "on by default");
    assert.equal(parse("--api-docs", "false").apiDocs, false);
    assert.equal(parse("--api-docs=false").apiDocs, false);
    assert.equal(parse("--api-docs").apiDocs, true);
    assert.equal(parse("--insecure-http").insecureHttp, true);
    assert.equal(parse("--insecure-http", "--api-docs", "0").apiDocs, false);
    assert.equal(loadConfig({}, { ATTESTD_API_DOCS: "false" }).apiDocs, false);
    assert.throws(() => parse("--api-docs", "maybe"), ConfigError);
  });

  it("flags win over env, env over the file, the file over defaults", () => {
    const f = file({ port: 1111, nonceTtl: 60, host: "0.0.0.0" });
    const c = loadConfig({ port: "3333", config: f }, { [envName("port")]: "2222", [envName("nonceTtl")]: "90" });
    assert.equal(c.port, 3333);
    assert.equal(c.nonceTtl, 90);
    assert.equal(c.host, "0.0.0.0");
    assert.equal(envName("nonceTtl"), "ATTESTD_NONCE_TTL");
  });

  it("rejects unknown config keys, bad types, out-of-range values and contradictions with one clear message", () => {
    assert.throws(() => loadConfig({ config: file({ nonceTTL: 5 }) }, {}), (e: Error) => e instanceof ConfigError && /unknown setting "nonceTTL"/.test(e.message));
    assert.throws(() => loadConfig({ port: "http" }, {}), /port must be a number/);
    assert.throws(() => loadConfig({}, { ATTESTD_PORT: "70000" }), /ATTESTD_PORT: port must be at most 65535/);
    assert.throws(() => loadConfig({ store: "mysql" }, {}), /store must be one of sqlite, postgres/);
    assert.throws(() => loadConfig({ store: "postgres" }, {}), /needs --database-url/);
    assert.throws(() => loadConfig({ insecureHttp: true, devTls: true }, {}), /cannot be combined/);
    assert.throws(() => loadConfig({ tlsCert: "a.pem" }, {}), /go together/);
    assert.throws(() => loadConfig({ headersTimeoutMs: 40_000 }, {}), /--headers-timeout-ms must not exceed --request-timeout-ms/);
    assert.equal(loadConfig({ headersTimeoutMs: 40_000, requestTimeoutMs: 0 }, {}).headersTimeoutMs, 40_000, "no request timeout: any header timeout");
  });

  it("Google's URLs for Play Integrity decoding: https, or http to a loopback stand-in; nothing else", () => {
    const c = loadConfig({}, {});
    assert.equal(c.playOauthUrl, "https://oauth2.googleapis.com/token");
    assert.equal(c.playApiUrl, "https://playintegrity.googleapis.com");
    assert.equal(loadConfig({ playApiUrl: "http://127.0.0.1:9999", playOauthUrl: "http://localhost:1/token" }, {}).playApiUrl, "http://127.0.0.1:9999");
    assert.throws(() => loadConfig({ playApiUrl: "http://playintegrity.example" }, {}), /--play-api-url http:\/\/playintegrity.example must be an https URL/);
    assert.throws(() => loadConfig({ playOauthUrl: "not a url" }, {}), /--play-oauth-url not a url is not a URL/);
    assert.throws(() => loadConfig({ playOauthUrl: "https://u:p@oauth.example/token" }, {}), (e: Error) => e.message === "--play-oauth-url must not carry a user or password");
    assert.throws(() => loadConfig({ playDecodeTimeoutMs: 10 }, {}), /play-decode-timeout-ms must be at least 100/);
  });
});
