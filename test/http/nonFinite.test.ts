import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { catalog } from "../../src/errors/catalog.ts";
import { accessTokenRequest, apiToken, type ClientKeys } from "../../src/enrollment/clientJwt.ts";
import { SESSION_COOKIE } from "../../src/portal/sessions.ts";
import { portalPeople, refusalCode } from "../helpers/portalPeople.ts";
import { KEY_HEADER, startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";
import { testActor } from "../helpers/audit.ts";

/**
 * A number too large for a double (1e309, 400 digits) reads as ±Infinity, in a query string (coerced by the
 * validator) and in a JSON body (JSON.parse) alike, and used to pass every bound of the schema on its way to a
 * store's 500. This walks every numeric parameter of every route in /openapi.json (query, path and JSON body, nested
 * fields included, and path parameters such as a policy version number), plus the portal pages that share those query schemas but are not in the document, and asks
 * for each the same answer as for any other invalid value of that field: 400 with the route's catalog code.
 */

type Schema = Record<string, any>;
const NON_FINITE = ["1e309", "-1e309", "9".repeat(400), "-" + "9".repeat(400)];
const numeric = (s: Schema | undefined): boolean =>
  !!s && (s.type === "integer" || s.type === "number" || (s.anyOf ?? s.oneOf ?? []).some(numeric));

/** A value the schema accepts, for the required siblings of the field under test (so only that field is wrong). */
function sample(s: Schema): unknown {
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  if (s.default !== undefined) return s.default;
  if (s.examples?.length) return s.examples[0];
  if (s.anyOf ?? s.oneOf) return sample((s.anyOf ?? s.oneOf)[0]);
  switch (s.type) {
    case "object":
      return Object.fromEntries((s.required ?? []).map((k: string) => [k, sample(s.properties[k])]));
    case "array":
      return [];
    case "integer":
    case "number":
      return s.minimum ?? 1;
    case "boolean":
      return false;
    case "string": {
      const re = s.pattern ? new RegExp(s.pattern, "u") : undefined;
      const n = Math.max(s.minLength ?? 1, 1);
      const found = ["a", "A", "0", "x@example.org"].map((c) => (c.length >= n ? c : c.repeat(n))).find((c) => !re || re.test(c));
      return found ?? "a".repeat(n);
    }
  }
  return null;
}

interface Target {
  method: string;
  path: string;
  where: "query" | "path" | "body";
  /** the query name, or the body's JSON path */
  field: string[];
  body?: Schema;
  partB: boolean;
}

/** `raw` as the number's own text, in the query or at `field` of a body that is otherwise valid */
function requestFor(t: Target, raw: string): { url: string; payload?: string } {
  const query = t.where === "query" ? `${t.field[0]}=${encodeURIComponent(raw)}` : "";
  const path = t.path.replace(/\{([^}]+)\}/g, (_, name: string) => (t.where === "path" && name === t.field[0] ? encodeURIComponent(raw) : "x"));
  const url = path + (query ? `?${query}` : "");
  if (t.where !== "body") return { url };
  const body = sample(t.body!) as Record<string, any>;
  let at = body;
  let schema = t.body!;
  for (const key of t.field.slice(0, -1)) {
    schema = schema.properties[key];
    at = at[key] ??= sample(schema);
  }
  at[t.field.at(-1)!] = "__NUMBER__";
  // JSON.stringify would write Infinity as null: the number goes in as text, as a client would send it
  return { url, payload: JSON.stringify(body).replace('"__NUMBER__"', raw) };
}

describe("non-finite numbers in every numeric parameter", () => {
  let t: TestRuntime;
  let targets: Target[];
  let admin: { cookie: string; csrf: string };
  let keys: ClientKeys;
  let accessToken: string;

  before(async () => {
    t = await startTestRuntime({}, { enrollment: { startWorker: false, tenantKeyBits: 2048 } });
    // a tenant's admin: every numeric parameter is on a tenant's route, which an operator would have to name
    admin = await portalPeople(t).add("ada@acme.example", "admin", "acme");
    ({ keys } = await t.runtime.enrollment.clients.createClient(t.tenant, { email: "ops@acme.example", readOnly: false, rps: 1000, burst: 1000 }, testActor()));
    const res = await t.runtime.app.inject({ method: "POST", url: "/svc/v1/auth/accesstoken", payload: await accessTokenRequest(keys, { nowMs: t.clock.nowMs(), validityMinutes: 30 }) });
    assert.equal(res.statusCode, 200, res.body);
    accessToken = res.json().accessToken;

    const doc = t.runtime.app.swagger() as unknown as { paths: Record<string, Record<string, Schema>> };
    targets = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const partB = path.startsWith("/svc/");
        for (const p of op.parameters ?? []) {
          if (numeric(p.schema) && (p.in === "query" || p.in === "path")) targets.push({ method, path, where: p.in, field: [p.name], partB });
        }
        const body = op.requestBody?.content?.["application/json"]?.schema as Schema | undefined;
        const walk = (s: Schema | undefined, at: string[]) => {
          if (!s) return;
          if (numeric(s)) targets.push({ method, path, where: "body", field: at, body: body!, partB });
          for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) walk(v, [...at, k]);
        };
        walk(body, []);
      }
    }
    // pages for people, hidden from the document, whose query schemas are the admin API's
    for (const [path, field] of [
      ["/portal/activity", "status"],
      ["/portal/enrollment", "page"],
      ["/portal/enrollment", "pageSize"],
      ["/portal/enrollment/transactions", "page"],
      ["/portal/enrollment/devices", "pageSize"],
    ] as const) {
      targets.push({ method: "get", path, where: "query", field: [field], partB: false });
    }
  });
  after(() => t.close());

  async function send(target: Target, raw: string): Promise<LightMyRequestResponse> {
    const { url, payload } = requestFor(target, raw);
    const headers: Record<string, string> = payload !== undefined ? { "content-type": "application/json" } : {};
    const o: InjectOptions = { method: target.method.toUpperCase() as InjectOptions["method"], url, headers, ...(payload !== undefined ? { payload } : {}) };
    if (target.path.startsWith("/portal/")) {
      o.cookies = { [SESSION_COOKIE]: admin.cookie };
      headers["x-csrf-token"] = admin.csrf;
      headers.origin = "http://localhost:80";
    } else if (target.partB && target.path !== "/svc/v1/auth/accesstoken") {
      headers["x-vendor-apitoken"] = await apiToken(keys, accessToken, { nowMs: t.clock.nowMs() });
    } else if (!target.partB) {
      headers[KEY_HEADER] = t.key;
    }
    return t.runtime.app.inject(o);
  }

  it("finds the numeric parameters to walk", () => {
    const names = targets.map((x) => `${x.method} ${x.path} ${x.field.join(".")}`);
    // a few that must be there, so an empty walk cannot pass
    for (const n of ["get /svc/v1/enroll/profiles pageNum", "get /svc/v1/enroll/devices pageSize", "post /portal/api/keys burst", "post /portal/api/clients rps", "get /portal/api/devices limit"]) {
      assert.ok(names.includes(n), `${n} in ${names.join(", ")}`);
    }
  });

  it("1e309, -1e309 and 400 digits are refused with 400 and the code any invalid value of the field gets", async () => {
    const codes = new Set(Object.values(catalog).map((e) => e.code));
    const failures: string[] = [];
    for (const target of targets) {
      const name = `${target.method.toUpperCase()} ${target.path} ${target.where} ${target.field.join(".")}`;
      // the oracle: a plainly wrong value of this field (a string where a number belongs)
      const wrong = await send(target, target.where === "body" ? '"abc"' : "abc");
      assert.equal(wrong.statusCode, 400, `${name} with "abc": ${wrong.body.slice(0, 300)}`);
      const expected = refusalCode(wrong);
      assert.ok(expected && codes.has(expected), `${name}: a catalog code (${expected})`);
      for (const raw of NON_FINITE) {
        const res = await send(target, raw);
        const code = res.statusCode === 500 ? "500" : refusalCode(res);
        if (res.statusCode !== 400 || code !== expected) failures.push(`${name} = ${raw.slice(0, 12)}: ${res.statusCode} ${code}, want 400 ${expected}`);
        // a path segment over 256 characters is refused by the router, before any route (and so any field) is known
        else if (!new RegExp(target.field.at(-1)!).test(res.body) && !(target.where === "path" && raw.length > 256 && /path segment is longer/.test(res.body)))
          failures.push(`${name} = ${raw.slice(0, 12)}: the answer does not name the field: ${res.body.slice(0, 200)}`);
      }
    }
    assert.deepEqual(failures, []);
  });
});
