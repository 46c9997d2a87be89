import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseResponse, rawConnect, serverClosed, type RawConnection } from "../helpers/rawHttp.ts";
import { startTestRuntime, type TestRuntime } from "../helpers/runtime.ts";

/**
 * What node:http itself decides, over real sockets on 127.0.0.1 (app.inject has no connection): slow clients cut
 * off by the request, header and keep-alive timeouts while others are served (issue 13, item 2), the per-address
 * connection cap, and node's own refusals answered with the catalog's bodies (item 5).
 */

/** listens on a free port of 127.0.0.1; returns the port */
async function listen(t: TestRuntime): Promise<number> {
  await t.runtime.app.listen({ host: "127.0.0.1", port: 0 });
  return (t.runtime.app.server.address() as { port: number }).port;
}

const get = (port: number, path: string, from?: string) =>
  rawConnect(port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, from ? { localAddress: from } : {});

function assertCatalogError(text: string, status: number, code: string, part: "A" | "B") {
  const res = parseResponse(text);
  assert.ok(res, `an HTTP answer, got ${JSON.stringify(text)}`);
  assert.equal(res.status, status, text);
  assert.equal(res.headers.connection, "close");
  const body = res.json();
  // node's own refusals name their errorId in the header too, as every error answer does
  assert.match(String(res.headers["x-error-id"]), /^[0-9a-f]{24}$/);
  if (part === "A") {
    assert.equal(body.result, "FAIL");
    assert.equal(body.error.code, code);
  } else {
    assert.equal(body.errorId, res.headers["x-error-id"]);
    assert.equal(body.code, code);
  }
  return { res, body };
}

describe("slow clients are cut off by the timeouts, others are served meanwhile", () => {
  let t: TestRuntime;
  let port: number;
  before(async () => {
    t = await startTestRuntime({ headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 300 });
    port = await listen(t);
  });
  after(async () => t.close());

  it("a chunked body that stops after one chunk, and a body shorter than its Content-Length, get 408 and a close", async () => {
    const chunked = await rawConnect(
      port,
      "POST /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    );
    const short = await rawConnect(
      port,
      "POST /svc/v1/auth/accesstoken HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{",
    );
    const silent = await rawConnect(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"); // headers never end
    // another client, served while those hang
    const normal = await get(port, "/healthz");
    const served = parseResponse(await serverClosed(normal, "the normal client"));
    assert.equal(served?.status, 200);

    // Fastify reads a POST's body before it finds the path unknown: the body never ends, the request times out
    assertCatalogError(await serverClosed(chunked, "POST /nope, chunked"), 408, "4080000", "A");
    assertCatalogError(await serverClosed(short, "the token route, 1 byte of 5000"), 408, "4080000", "B");
    assertCatalogError(await serverClosed(silent, "headers that never end"), 408, "4080000", "A");
  });

  it("a request answered before its body arrived gets no second answer when the body then times out", async () => {
    // no token: refused 401 before the body is read; the body then never completes
    const c = await rawConnect(port, "POST /svc/v1/enroll/profiles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{");
    const answer = await serverClosed(c, "the answered request");
    assert.equal(parseResponse(answer)?.status, 401);
    assert.equal(answer.match(/HTTP\/1\.1 /g)?.length, 1, "one answer, then the close");
  });

  it("an idle kept-alive connection is closed after the keep-alive timeout", async () => {
    const c = await rawConnect(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const answer = await serverClosed(c, "the kept-alive connection");
    assert.equal(parseResponse(answer)?.status, 200, "answered first");
  });

  it("the refusals are in the activity log with their error ids", async () => {
    const c = await rawConnect(port, "POST /svc/v1/nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{");
    const { body } = assertCatalogError(await serverClosed(c, "a short body"), 408, "4080000", "B");
    await t.runtime.activity.flush();
    const logged = await t.runtime.stores.durable.queryActivity({ errorId: body.errorId });
    assert.deepEqual(logged.map((e) => [e.status, e.code, e.remoteAddress]), [[408, "4080000", "127.0.0.1"]]);
  });
});

describe("per-address connection cap", () => {
  let t: TestRuntime;
  let port: number;
  const held: RawConnection[] = [];
  before(async () => {
    t = await startTestRuntime({ maxConnectionsPerAddress: 3, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
    port = await listen(t);
  });
  after(async () => {
    for (const c of held) c.socket.destroy();
    await t.close();
  });

  it("closes the extra connections of one address at once, while another address is served", async () => {
    // three connections from 127.0.0.1, held open mid-request (headers not finished)
    for (let i = 0; i < 3; i++) held.push(await rawConnect(port, "GET /healthz HTTP/1.1\r\n"));
    const extra = await get(port, "/healthz");
    assert.equal(await serverClosed(extra, "the fourth connection of 127.0.0.1"), "", "closed without an answer");

    const other = await get(port, "/healthz", "127.0.0.2");
    assert.equal(parseResponse(await serverClosed(other, "127.0.0.2"))?.status, 200, "another address is not starved");

    // one of the three ends: 127.0.0.1 may connect again
    held.pop()!.socket.destroy();
    await new Promise((r) => setImmediate(r));
    let again = "";
    for (let tries = 0; tries < 50 && !parseResponse(again); tries++) {
      again = await serverClosed(await get(port, "/healthz"), "127.0.0.1 again"); // the server may see the close a moment later
    }
    assert.equal(parseResponse(again)?.status, 200);

    const metrics = await t.runtime.app.inject({ method: "GET", url: "/metrics" });
    assert.match(metrics.body, /^attestd_connections_refused_total [1-9]\d*$/m);
  });
});

describe("node:http's own refusals carry the catalog's body", () => {
  let t: TestRuntime;
  let port: number;
  before(async () => {
    t = await startTestRuntime();
    port = await listen(t);
  });
  after(async () => t.close());

  const send = async (raw: string) => {
    const c = await rawConnect(port, raw);
    return serverClosed(c, JSON.stringify(raw.slice(0, 40)));
  };

  it("431 for headers over node's limit, Part A or Part B body by the path", async () => {
    const big = `X-Big: ${"a".repeat(20_000)}\r\n`;
    assertCatalogError(await send(`GET /v2/nonces HTTP/1.1\r\nHost: x\r\n${big}\r\n`), 431, "4310000", "A");
    assertCatalogError(await send(`GET /svc/v1/enroll/profiles HTTP/1.1\r\nHost: x\r\n${big}\r\n`), 431, "4310000", "B");
  });

  it("400 for a request line or header that is not HTTP", async () => {
    assertCatalogError(await send("GARBAGE\r\n\r\n"), 400, "4000000", "A");
    assertCatalogError(await send("GET /v2/nonces HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"), 400, "4000000", "A");
    const { body } = assertCatalogError(await send("GET /svc/v1/enroll/profiles HTTP/1.1\r\nBad Header\r\n\r\n"), 400, "4000000", "B");
    assert.equal(body.message, "RESOURCE_INVALID_PARAM");
  });

  it("405 with Allow for a method node's parser does not know, on a path that answers 405", async () => {
    const { res } = assertCatalogError(await send("FROB /v2/nonces HTTP/1.1\r\nHost: x\r\n\r\n"), 405, "4050000", "A");
    assert.equal(res.headers.allow, "POST");
    assertCatalogError(await send("FROB /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n"), 400, "4000000", "A");
  });
});
