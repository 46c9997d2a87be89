import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { SESSION_COOKIE } from "../../src/portal/sessions.ts";
import type { TestRuntime } from "./runtime.ts";
import { testActor } from "../helpers/audit.ts";

export const PORTAL_PASSWORD = "a long and unusual passphrase";

export interface PortalRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  url: string;
  payload?: object;
  /** the person's own token by default; false: none; a string: that one */
  csrf?: string | false;
}

/**
 * Portal users of an in-process runtime, signed in as people are (invitation → password → sign-in, through the
 * admin API), and requests made as one of them with the session cookie and the page's CSRF token.
 */
export function portalPeople(t: TestRuntime) {
  const origin = "http://localhost:80";
  const people = new Map<string, { cookie: string; csrf: string }>();
  return {
    async add(email: string, role: "admin" | "viewer" | "operator", tenant?: string): Promise<{ cookie: string; csrf: string }> {
      const inv = await t.runtime.portal.accounts.invite({ email, role, ...(tenant ? { tenant } : {}) }, testActor());
      const set = await t.runtime.app.inject({ method: "POST", url: "/portal/api/invite", headers: { origin }, payload: { token: inv.token, password: PORTAL_PASSWORD } });
      assert.equal(set.statusCode, 200, set.body);
      const res = await t.runtime.app.inject({ method: "POST", url: "/portal/api/session", headers: { origin }, payload: { email, password: PORTAL_PASSWORD } });
      assert.equal(res.statusCode, 200, res.body);
      const session = res.cookies.find((c) => c.name === SESSION_COOKIE)!;
      assert.deepEqual([session.httpOnly, session.secure, session.sameSite, session.path], [true, true, "Strict", "/"], "the session cookie's flags");
      const cookie = session.value;
      const page = await t.runtime.app.inject({ method: "GET", url: "/portal/verdicts", cookies: { [SESSION_COOKIE]: cookie } });
      const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)![1]!;
      people.set(email, { cookie, csrf });
      return { cookie, csrf };
    },
    as(email: string, o: PortalRequest): Promise<LightMyRequestResponse> {
      const p = people.get(email)!;
      const csrf = o.csrf === undefined ? p.csrf : o.csrf;
      return t.runtime.app.inject({
        method: o.method ?? "GET",
        url: o.url,
        cookies: { [SESSION_COOKIE]: p.cookie },
        headers: csrf ? { "x-csrf-token": csrf } : {},
        ...(o.payload ? { payload: o.payload } : {}),
      });
    },
  };
}

/**
 * The catalog code of a refused portal request: the API's Part B body, or for a page the error page that shows the
 * same code to a person (web/pages/error.ts).
 */
export function refusalCode(res: LightMyRequestResponse): string | undefined {
  if (String(res.headers["content-type"]).startsWith("text/html")) return /Code <code>([0-9]+)<\/code>/.exec(res.body)?.[1];
  return (res.json() as { code?: string }).code;
}
