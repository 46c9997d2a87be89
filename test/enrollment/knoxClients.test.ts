import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { decodeJwt } from "jose";
import { ManualClock } from "../../src/clock.ts";
import { accessTokenRequest } from "../../src/enrollment/clientJwt.ts";
import { catalog } from "../../src/errors/catalog.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { assertPartBError } from "./harness.ts";
import { testActor } from "../helpers/audit.ts";

/** What Samsung's knox-token-library-js exports (it ships no types): each reads a keys.json file by name. */
interface KnoxTokenLibrary {
  generateSignedClientIdentifierJWT(keysFile: string, clientIdentifier: string): string;
  generateSignedAccessTokenJWT(keysFile: string, accessToken: string): string;
  generateBase64EncodedStringPublicKey(keysFile: string): string;
}
const knox = createRequire(import.meta.url)("knox-token-library-js") as KnoxTokenLibrary;

/**
 * A customer migrating from Knox with Samsung's own token library, unchanged: it signs with `aud` KnoxWSM, a 72-character
 * jti (two UUIDs), an exp 30 minutes ahead on every JWT, and the real clock (so the runtime runs on "now", not T0).
 */
describe("Knox token library clients (--token-audience)", () => {
  const runtimes: TestRuntime[] = [];
  after(async () => {
    for (const r of runtimes) await r.close();
  });

  /** a runtime with `settings` as flags, and keys.json for a client of its tenant, written where the library reads it */
  const start = async (settings: Record<string, unknown>) => {
    const t = await startTestRuntime(settings, { clock: new ManualClock(Date.now()), enrollment: { startWorker: false, tenantKeyBits: 2048 } });
    runtimes.push(t);
    const { keys } = await t.runtime.enrollment.clients.createClient(t.tenant, { email: "ops@acme.example", readOnly: false, rps: 1000, burst: 1000 }, testActor());
    const keysFile = path.join(t.dir, "keys.json");
    writeFileSync(keysFile, JSON.stringify(keys), { mode: 0o600 });
    const requestToken = () =>
      t.runtime.app.inject({
        method: "POST",
        url: "/svc/v1/auth/accesstoken",
        payload: {
          clientIdentifierJwt: knox.generateSignedClientIdentifierJWT(keysFile, keys.Identifier),
          base64EncodedStringPublicKey: knox.generateBase64EncodedStringPublicKey(keysFile),
          validityForAccessTokenInMinutes: 30,
        },
      });
    return { t, keysFile, requestToken };
  };

  let knoxReady: Awaited<ReturnType<typeof start>>;
  before(async () => {
    knoxReady = await start({ tokenAudience: "KnoxWSM,VendorWSM" });
  });

  it("runs the whole token flow and a profile's create and read with the library's JWTs", async () => {
    const { t, keysFile, requestToken } = knoxReady;
    const tokenRes = await requestToken();
    assert.equal(tokenRes.statusCode, 200, tokenRes.body);
    const accessToken = tokenRes.json().accessToken as string;

    const call = (method: "GET" | "POST", url: string, payload?: object) => {
      const header = knox.generateSignedAccessTokenJWT(keysFile, accessToken);
      const claims = decodeJwt(header);
      // what makes these JWTs differ from attestd's own client helpers: the audience and a jti past 36 characters
      assert.equal(claims.aud, "KnoxWSM");
      assert.equal(claims.jti!.length, 72);
      return t.runtime.app.inject({ method, url, headers: { "x-vendor-apitoken": header }, ...(payload ? { payload } : {}) });
    };
    const created = await call("POST", "/svc/v1/enroll/profiles", { name: "Migrated from Knox", mdmUrl: "https://mdm.acme.example/enroll" });
    assert.equal(created.statusCode, 200, created.body);
    const { profileId } = created.json() as { profileId: string };
    const read = await call("GET", `/svc/v1/enroll/profiles/${profileId}`);
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().name, "Migrated from Knox");
  });

  it("still admits VendorWSM clients when both audiences are listed", async () => {
    const { t } = knoxReady;
    const { keys } = await t.runtime.enrollment.clients.createClient(t.tenant, { email: "vendor@acme.example", readOnly: false, rps: 1000, burst: 1000 }, testActor());
    const res = await t.runtime.app.inject({
      method: "POST",
      url: "/svc/v1/auth/accesstoken",
      payload: await accessTokenRequest(keys, { nowMs: t.clock.nowMs() }),
    });
    assert.equal(res.statusCode, 200, res.body);
  });

  it("refuses KnoxWSM by default with ACCESS_TOKEN_BAD_REQUEST", async () => {
    const { requestToken } = await start({});
    assertPartBError(await requestToken(), catalog.ACCESS_TOKEN_BAD_REQUEST);
  });
});
