import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { RefreshingSource, type RefreshingSourceOptions } from "../../src/trust/refreshingSource.ts";
import { T0 } from "../helpers/clock.ts";

/**
 * The refreshing source on its own, with a toy document (a line of words): the bounds, the disk cache's edge
 * cases and the no-overlap rule that test/android/trustSource.test.ts does not reach through the Android sources.
 */

const DOC_URL = "https://trust.example/doc";

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), "attestd-refreshing-"));
  dirs.push(d);
  return d;
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface Words {
  words: string[];
}

function source(over: Partial<RefreshingSourceOptions<Words>> = {}): RefreshingSource<Words> {
  let t = T0;
  return new RefreshingSource<Words>({
    source: DOC_URL,
    name: "toy",
    noun: "the toy list",
    verb: "is",
    parse: (body, where) => {
      const text = body.toString("utf8");
      if (!/^[a-z ]+$/.test(text)) throw new Error(`${where}: not words`);
      return { words: text.split(" ") };
    },
    measure: (d) => ({ items: d.words.length, text: `${d.words.length} words` }),
    cacheDir: tempDir(),
    cacheFile: "toy.json",
    maxAgeSeconds: 60,
    maxAgeSetting: "--toy-max-age",
    now: () => new Date((t += 1000)),
    ...over,
  });
}

/** A fetch answering `body()` each time, counting requests. */
function serving(body: () => string | ReadableStream<Uint8Array>, init: ResponseInit = {}) {
  const net = { requests: 0, fetch: (async () => (net.requests++, new Response(body(), init))) as unknown as typeof fetch };
  return net;
}

test("bodies are bounded: a declared length, a streamed body and a file over maxBytes are failures", async () => {
  const declared = source({ maxBytes: 10, fetch: serving(() => "a".repeat(11), { headers: { "content-length": "11" } }).fetch });
  await declared.refresh();
  assert.equal(declared.health(new Date(T0)).lastError, "body of 11 bytes exceeds 10");

  const chunks = () =>
    new ReadableStream({
      start(c) {
        for (let i = 0; i < 4; i++) c.enqueue(new TextEncoder().encode("abcd"));
        c.close();
      },
    });
  const streamed = source({ maxBytes: 10, fetch: serving(chunks).fetch });
  await streamed.refresh();
  assert.equal(streamed.health(new Date(T0)).lastError, "body exceeds 10 bytes");

  const file = path.join(tempDir(), "doc.txt");
  writeFileSync(file, "a".repeat(11));
  const cacheDir = tempDir();
  const fromFile = source({ source: file, maxBytes: 10, cacheDir });
  await fromFile.refresh();
  assert.equal(
    fromFile.health(new Date(T0)).summary,
    `the toy list could not be read from ${file} (file of 11 bytes exceeds 10) and no cached copy is in ${cacheDir}`,
  );
});

test("refreshes never overlap: a refresh during a read joins it", async () => {
  const net = serving(() => "alpha beta");
  const src = source({ fetch: net.fetch });
  await Promise.all([src.refresh(), src.refresh(), src.refresh()]);
  assert.equal(net.requests, 1);
  await src.refresh();
  assert.equal(net.requests, 2);
});

test("a body that does not parse keeps the data in hand; identical content keeps the same object", async () => {
  let body = "alpha beta";
  const src = source({ fetch: serving(() => body).fetch });
  await src.refresh();
  const first = src.data();
  assert.deepEqual([first?.words, src.generation], [["alpha", "beta"], 1]);
  await src.refresh();
  assert.equal(src.data(), first, "byte-identical content: the same data object");
  assert.equal(src.generation, 1);
  body = "ALPHA!";
  await src.refresh();
  assert.equal(src.data(), first, "a bad body is never half-used");
  assert.equal(src.health(new Date(T0)).lastError, `toy ${DOC_URL}: not words`);
  body = "gamma";
  await src.refresh();
  assert.deepEqual([src.data()?.words, src.generation], [["gamma"], 2]);
});

test("the disk cache: written atomically for its source, refused when it is not an attestd cache file", async () => {
  const cacheDir = tempDir();
  const good = source({ cacheDir, fetch: serving(() => "alpha").fetch });
  await good.refresh();
  assert.deepEqual(readdirSync(cacheDir), ["toy.json"], "no temporary file left behind");

  const down = (async () => {
    throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
  }) as unknown as typeof fetch;
  const fromCache = source({ cacheDir, fetch: down });
  await fromCache.refresh();
  const h = fromCache.health(new Date(T0 + 5000));
  assert.deepEqual([h.state, h.origin, h.items], ["ok", "cache", 1]);
  assert.equal(
    h.summary,
    `the toy list from ${DOC_URL}: 1 words, obtained ${h.fetchedAt}, read back from the disk cache in ${cacheDir} ` +
      "(the source failed: fetch failed: ECONNREFUSED)",
  );
  assert.match(
    fromCache.health(new Date(T0 + 120_000)).summary,
    new RegExp(`^the toy list is stale: last obtained .* \\(the copy in the disk cache in ${cacheDir}\\), older than --toy-max-age 60 s; `),
  );

  writeFileSync(path.join(cacheDir, "toy.json"), JSON.stringify({ hello: "world" }));
  const garbage = source({ cacheDir, fetch: down });
  await garbage.refresh();
  assert.equal(
    garbage.health(new Date(T0)).summary,
    `the toy list could not be fetched from ${DOC_URL} (fetch failed: ECONNREFUSED) and the cached copy ` +
      `${path.join(cacheDir, "toy.json")} is unreadable (not an attestd cache file)`,
  );
});
