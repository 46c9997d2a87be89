/**
 * The container image and the compose deployment, built and run with podman (`npm run test:image`). Not named
 * *.test.ts: `npm test` must pass on a fresh machine, which has no podman; `.ci/run` runs this after it.
 *
 * Needs root (rootful podman), podman with runc, podman-compose, mmdebstrap, openssl and curl. No image registry is
 * reachable where it runs, so `.ci/container-images.sh` first makes the base images from Debian's packages and the
 * npm registry (reused once made). Then it runs the commands of docs/deployment.md's "Containers" section as
 * written, in a temporary directory, with podman for docker: build the image, make a secrets key and a certificate,
 * run one instance and walk nonce → blob → verdict `Yes` against it; then bring up compose.yaml (PostgreSQL, Redis,
 * two instances) and post to the second instance the blob for a nonce the first issued. Whatever happens, every
 * container, volume and network it made is removed at the end; the images stay, as the next run's cache.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { childEnv, freePort, REPO } from "../helpers/serverProcess.ts";
import { walkthroughBlocks } from "../helpers/walkthrough.ts";

/** The image the test builds: a name of its own, so a developer's `attestd` image is left alone; kept as a cache. */
const IMAGE = "localhost/attestd:test";
/** The prefix of every container, volume, network and compose project this run makes. */
const RUN = `attestd-test-${process.pid}`;
// every podman here, podman-compose's and .ci/container-images.sh's included (they inherit it)
process.env.CONTAINERS_CONF ??= path.join(REPO, "test/image/containers.conf");
const PACKAGE = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string; devDependencies: Record<string, string> };

interface Outcome {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * What a failure message may show: never the secrets the docs' commands made in the work directory (the database
 * password podman-compose prints in its command lines, the secrets key), and only the end of a long output.
 */
let work = "";
function redact(text: string): string {
  const secrets: string[] = [];
  const env = path.join(work, ".env");
  if (work && existsSync(env)) secrets.push(.../^POSTGRES_PASSWORD=(.+)$/m.exec(readFileSync(env, "utf8"))?.slice(1) ?? []);
  const key = path.join(work, "secrets/secrets.key");
  if (work && existsSync(key)) secrets.push(readFileSync(key, "utf8").trim());
  return secrets.filter(Boolean).reduce((t, secret) => t.replaceAll(secret, "<redacted>"), text);
}

function tail(text: string, lines = 60): string {
  const all = redact(text).trimEnd().split("\n");
  return all.length > lines ? ["…", ...all.slice(-lines)].join("\n") : all.join("\n");
}

function run(command: string, args: string[], o: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number; what: string }): Outcome {
  const r = spawnSync(command, args, {
    cwd: o.cwd ?? REPO,
    env: o.env ?? childEnv(),
    encoding: "utf8",
    timeout: o.timeoutMs,
    killSignal: "SIGKILL",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === "ETIMEDOUT") {
    assert.fail(`${o.what}: no answer within ${o.timeoutMs / 1000} s\n${tail(r.stdout ?? "")}\n${tail(r.stderr ?? "")}${diagnostics()}`);
  }
  if (r.error) assert.fail(`${o.what}: ${r.error.message}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a command that must succeed; its stdout. */
function must(command: string, args: string[], o: Parameters<typeof run>[2]): string {
  const r = run(command, args, o);
  if (r.status !== 0) assert.fail(`${o.what}: exit ${r.status}\n${tail(r.stdout)}\n${tail(r.stderr)}${diagnostics()}`);
  return r.stdout;
}

const podman = (args: string[], what: string, timeoutMs = 60_000) => must("podman", args, { what, timeoutMs });
const quiet = (args: string[]) => run("podman", args, { what: `podman ${args.join(" ")}`, timeoutMs: 60_000 });

/**
 * The containers of this run, their state, their address and MAC on each network, the host's firewall rules for
 * the networks and the end of each container's logs: what a failure message needs to be read. The addresses are
 * there because the compose test has failed on connections between healthy containers timing out (an instance to
 * PostgreSQL and Redis on the internal network), which a duplicate address or a rule would explain.
 */
function diagnostics(): string {
  const names = quiet(["ps", "-a", "--filter", `name=^${RUN}`, "--format", "{{.Names}}\t{{.Status}}"]).stdout.trim();
  if (!names) return "";
  let out = `\n--- containers of this run ---\n${names}\n`;
  const addresses = quiet(["inspect", "--format", "{{.Name}}{{range $net, $a := .NetworkSettings.Networks}} {{$net}}={{$a.IPAddress}}/{{$a.MacAddress}}{{end}}", ...names.split("\n").map((l) => l.split("\t")[0]!)]);
  const rules = spawnSync("iptables", ["-S", "NETAVARK_FORWARD"], { encoding: "utf8" });
  out += `--- addresses ---\n${addresses.stdout.trim()}\n--- iptables -S NETAVARK_FORWARD ---\n${(rules.stdout ?? "").trim() || (rules.stderr ?? "").trim()}\n`;
  for (const line of names.split("\n")) {
    const name = line.split("\t")[0]!;
    const logs = quiet(["logs", name]);
    out += `--- podman logs ${name} (the end) ---\n${tail(logs.stdout + logs.stderr, 20)}\n`;
  }
  return redact(out);
}

/** The last line of a block's output as JSON: the answer of its last curl. */
function lastJson(out: string): Record<string, any> {
  const last = out.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last) as Record<string, any>;
  } catch {
    return assert.fail(`not a JSON answer: ${out}${diagnostics()}`);
  }
}

/** Replaces `from` (which must occur: a doc that changed fails here, not somewhere obscure) with `to`. */
function sub(block: string, from: string, to: string): string {
  assert.ok(block.includes(from), `docs/deployment.md's block still contains ${JSON.stringify(from)}:\n${block}`);
  return block.replaceAll(from, to);
}

/**
 * The shell the docs' blocks run in. `docker` is podman (docker compose is podman-compose 1.0.3, Debian's, with what
 * it lacks done here), `npm run --silent attestd --` is the checkout's CLI, `sudo` is nothing (the test is root).
 */
const SHIM = String.raw`
set -euo pipefail
# podman runs health checks from systemd timers, absent here: run the check until it passes, as time would
wait_healthy() {
  local i
  for ((i = 0; i < 240; i++)); do
    podman healthcheck run "$1" >/dev/null 2>&1 && return 0
    if [ "$(podman inspect --format '{{.State.Running}}' "$1")" != true ]; then
      echo "container $1 stopped before its health check passed" >&2
      return 1
    fi
    sleep 0.25
  done
  echo "container $1: health check still failing after 60 s" >&2
  return 1
}
# podman-compose 1.0.3 ignores depends_on's conditions and --wait, and its exec prints its own command line on
# stdout: start the databases, then the instances once the databases are healthy, wait until they are too (what
# docker compose up -d --wait does); exec straight into the service's container
compose() {
  case "$1" in
    up)
      [ "$*" = "up -d --wait" ] || { echo "test shim: compose $* is not handled" >&2; return 2; }
      podman-compose -p "$RUN" up -d postgres redis >&2
      wait_healthy "$RUN"_postgres_1
      wait_healthy "$RUN"_redis_1
      podman-compose -p "$RUN" up -d attestd-1 attestd-2 >&2
      wait_healthy "$RUN"_attestd-1_1
      wait_healthy "$RUN"_attestd-2_1
      ;;
    exec)
      shift
      [ "$1" = -T ] && shift
      local service=$1
      shift
      podman exec "$RUN"_"$service"_1 "$@"
      ;;
    *) echo "test shim: compose $1 is not handled" >&2; return 2 ;;
  esac
}
docker() {
  local arg name=
  case "$1" in
    build)
      shift
      # the base made from Debian's packages; npm's cache and, behind a TLS-inspecting proxy, its CA from the host
      podman build --isolation chroot --format docker --pull=never --build-arg NODE_IMAGE="$NODE_IMAGE" \
        -v "$NPM_CACHE:/root/.npm" $BUILD_CA "$@"
      ;;
    run)
      for arg in "$@"; do [ "$name" = next ] && name=$arg; [ "$arg" = --name ] && name=next; done
      podman "$@"
      wait_healthy "$name"
      ;;
    compose) shift; compose "$@" ;;
    *) podman "$@" ;;
  esac
}
npm() {
  [ "$1 $2 $3 $4" = "run --silent attestd --" ] || { echo "test shim: npm $* is not handled" >&2; return 2; }
  shift 4
  node "$REPO/bin/attestd.js" "$@"
}
sudo() { "$@"; }
`;

describe("the container image (docs/deployment.md, Containers)", { timeout: 900_000 }, () => {
  work = mkdtempSync(path.join(tmpdir(), "attestd-image-"));
  const state = path.join(work, "state.sh");
  let env: NodeJS.ProcessEnv;
  let port = 0;
  const containerBlocks = walkthroughBlocks("docs/deployment.md", "container");
  const composeBlocks = walkthroughBlocks("docs/deployment.md", "compose");
  const composeYaml = walkthroughBlocks("docs/deployment.md", "compose", "yaml");

  /** Runs one of the docs' blocks in the shim's shell, in the work directory, with the variables earlier blocks set. */
  function block(script: string, what: string, timeoutMs = 120_000, cwd = work): string {
    const saved = existsSync(state) ? `source ${state}\n` : "";
    const out = must("bash", ["-c", `${SHIM}\n${saved}${script}\n{ declare -p KEY NONCE 2>/dev/null || true; } > ${state}`], {
      what: `docs/deployment.md, ${what}`,
      cwd,
      env,
      timeoutMs,
    });
    return out;
  }

  before(() => {
    assert.equal(process.getuid?.(), 0, "npm run test:image runs rootful podman: run it as root");
    for (const tool of ["podman", "podman-compose", "mmdebstrap", "openssl", "curl"]) {
      assert.equal(run("sh", ["-c", `command -v ${tool}`], { what: tool, timeoutMs: 5_000 }).status, 0, `${tool} is not installed (apt-get install -y podman runc podman-compose mmdebstrap)`);
    }
    const images = must("bash", [path.join(REPO, ".ci/container-images.sh")], { what: ".ci/container-images.sh", timeoutMs: 600_000 });
    const base = Object.fromEntries(images.trim().split("\n").map((l) => l.split("=", 2) as [string, string]));
    for (const name of ["NODE_IMAGE", "POSTGRES_IMAGE", "REDIS_IMAGE"]) assert.ok(base[name], `.ci/container-images.sh names ${name}:\n${images}`);
    const ca = process.env.NODE_EXTRA_CA_CERTS;
    env = childEnv({
      RUN,
      REPO,
      NODE_IMAGE: base.NODE_IMAGE,
      // the cache the host's npm ci filled (npm run names it), so the build downloads little
      NPM_CACHE: process.env.npm_config_cache ?? path.join(homedir(), ".npm"),
      BUILD_CA: ca ? `-v ${ca}:${ca}:ro --build-arg NODE_EXTRA_CA_CERTS=${ca}` : "",
      // compose.yaml's images: the stand-ins, and the image built here
      POSTGRES_IMAGE: base.POSTGRES_IMAGE,
      REDIS_IMAGE: base.REDIS_IMAGE,
      ATTESTD_IMAGE: IMAGE,
    });
    assert.equal(containerBlocks.length, 6, "docs/deployment.md's container blocks: build, secrets, trust, run, walk, health");
    block(sub(containerBlocks[0]!, "docker build -t attestd .", `docker build -t ${IMAGE} .`), "docker build", 600_000, REPO);
  });

  after(() => {
    const ours = (args: string[]) => quiet(args).stdout.split("\n").filter((name) => name.startsWith(RUN));
    const containers = ours(["ps", "-a", "--format", "{{.Names}}"]);
    if (containers.length > 0) quiet(["rm", "-f", "-v", "-t", "2", ...containers]);
    for (const kind of ["volume", "network"]) {
      const left = ours([kind, "ls", "--format", "{{.Name}}"]);
      if (left.length > 0) quiet([kind, "rm", "-f", ...left]);
    }
    rmSync(work, { recursive: true, force: true });
  });

  it("holds the service and nothing else, runs as non-root, and its health check can fail", () => {
    const [inspected] = JSON.parse(podman(["image", "inspect", IMAGE], "podman image inspect")) as [{ Config: Record<string, any>; Healthcheck?: { Test?: string[] } }];
    const config = inspected.Config;
    assert.equal(config.User, "10001:10001");
    assert.deepEqual(config.Entrypoint, ["attestd"]);
    assert.deepEqual(config.Cmd, ["serve"]);
    assert.ok("8443/tcp" in config.ExposedPorts, JSON.stringify(config.ExposedPorts));
    assert.ok("/data" in config.Volumes, JSON.stringify(config.Volumes));
    // podman keeps it beside the configuration, in the docker format only (hence podman build --format docker)
    assert.match(inspected.Healthcheck?.Test?.join(" ") ?? "", /\/healthz/, "a HEALTHCHECK on /healthz");
    const settings = (config.Env as string[]).filter((e) => e.startsWith("ATTESTD_")).map((e) => e.split("=")[0]).sort();
    assert.deepEqual(settings, ["ATTESTD_DATA_DIR", "ATTESTD_HOST"], "no secret, key or certificate setting baked in");

    const facts = podman(["run", "--rm", "--entrypoint", "sh", IMAGE, "-c", [
      "echo uid=$(id -u)",
      "echo data=$(stat -c '%a %u' /data)",
      "echo app=$(ls /app | tr '\\n' ' ')",
      "echo dist=$(ls /app/dist | tr '\\n' ' ')",
      "echo npm=$(command -v npm || echo none)",
      `echo dev=$(cd /app/node_modules && ls -d ${Object.keys(PACKAGE.devDependencies).join(" ")} 2>/dev/null | tr '\\n' ' ')`,
      "echo tests=$(find /app -path /app/node_modules -prune -o \\( -name test -o -name bench -o -name '*.test.*' -o -name '*.ts' ! -name '*.d.ts' \\) -print | tr '\\n' ' ')",
      "echo private=$(find / -xdev \\( -name secrets.key -o -name tls.key -o -name '*.sqlite' \\) -print 2>/dev/null | tr '\\n' ' ')",
    ].join("; ")], "the image's files");
    const fact = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(facts)?.[1]?.trim();
    assert.equal(fact("uid"), "10001", facts);
    assert.equal(fact("data"), "700 10001", facts);
    assert.equal(fact("app"), "LICENSE bin dist node_modules package.json", facts);
    assert.equal(fact("dist"), "src web", facts);
    assert.equal(fact("npm"), "none", facts);
    assert.equal(fact("dev"), "", `devDependencies in the image: ${facts}`);
    assert.equal(fact("tests"), "", `test, bench or TypeScript files in the image: ${facts}`);
    assert.equal(fact("private"), "", `secret or state files in the image: ${facts}`);

    assert.equal(podman(["run", "--rm", IMAGE, "--version"], "attestd --version").trim(), PACKAGE.version);

    // the check must be able to say no: a container of the image whose service is not running is unhealthy
    const idle = `${RUN}-idle`;
    podman(["run", "-d", "--name", idle, "--entrypoint", "sleep", IMAGE, "60"], "an idle container");
    try {
      assert.notEqual(quiet(["healthcheck", "run", idle]).status, 0, "the health check passed with no service running");
    } finally {
      quiet(["rm", "-f", "-v", "-t", "0", idle]);
    }
  });

  it("one instance, as the docs run it: secrets and certificate mounted, nonce → blob → Yes, healthy", async () => {
    port = await freePort();
    const [, secrets, trust, start, walk, health] = containerBlocks;
    const local = (b: string) => sub(b, "localhost:8443", `localhost:${port}`);
    block(secrets!, "the secrets key and the certificate");
    block(trust!, "the trust files");
    block(
      [
        ["--name attestd ", `--name ${RUN} `],
        ["-p 8443:8443", `-p ${port}:8443`],
        ["attestd-data:/data", `${RUN}-data:/data`],
        ["\n  attestd serve ", `\n  ${IMAGE} serve `],
      ].reduce((b, [from, to]) => sub(b, from!, to!), start!),
      "docker run",
    );
    const answer = block(local(sub(walk!, "docker exec attestd ", `docker exec ${RUN} `)), "the walk-through");
    const verdict = lastJson(answer);
    assert.equal(verdict.status, "Success", answer + diagnostics());
    assert.equal(verdict.verdict, "Yes", answer + diagnostics());
    assert.equal(block(sub(health!, "}}' attestd", `}}' ${RUN}`), "docker inspect").trim(), "healthy");
    const logs = podman(["logs", RUN], "podman logs");
    assert.match(logs, /"keyFile":"\/run\/secrets\/attestd\/secrets.key"/, "the mounted secrets key is the one in use");
    assert.match(logs, /"tls":"on"/);
    assert.doesNotMatch(logs, new RegExp(readFileSync(path.join(work, "secrets/secrets.key"), "utf8").trim().replace(/[+/=]/g, "\\$&")), "the key never logged");
    quiet(["rm", "-f", "-v", "-t", "2", RUN]);
  });

  it("compose.yaml: two instances on PostgreSQL and Redis, a nonce from one, its verdict Yes from the other", async () => {
    assert.ok(existsSync(path.join(work, "secrets/tls.crt")) && existsSync(path.join(work, "trust/vendor-roots.pem")), "the single-instance test made secrets/ and trust/");
    copyFileSync(path.join(REPO, "compose.yaml"), path.join(work, "compose.yaml"));
    assert.equal(composeYaml.length, 1, "one compose.override.yaml in the docs");
    writeFileSync(path.join(work, "compose.override.yaml"), composeYaml[0]!);
    const [ports1, ports2] = [await freePort(), await freePort()];
    env = { ...env, ATTESTD_1_PORT: String(ports1), ATTESTD_2_PORT: String(ports2) };
    assert.equal(composeBlocks.length, 2, "docs/deployment.md's compose blocks: up, walk");
    const [up, walk] = composeBlocks;
    block(up!, "docker compose up", 300_000);
    const answer = block(sub(sub(walk!, "localhost:8443", `localhost:${ports1}`), "localhost:8444", `localhost:${ports2}`), "the two-instance walk-through");
    const verdict = lastJson(answer);
    assert.equal(verdict.status, "Success", answer + diagnostics());
    assert.equal(verdict.verdict, "Yes", answer + diagnostics());

    // the nonce is used up for both: the first instance, which issued it, now refuses it (Redis is shared)
    const again = block(
      `curl -sS --cacert secrets/ca.pem -X POST -H "x-vendor-attest-api-key: $KEY" -H "Content-Type: application/octet-stream" ` +
        `--data-binary @./data/blob.bin "https://localhost:${ports1}/v2/blobs?nonce=$NONCE"`,
      "the same blob again, to the first instance",
    );
    assert.equal(lastJson(again).error?.code, "4000004", again);
    // both instances opened the store's secrets with the one key (a second key would have stopped one at start)
    const keyIds = ["attestd-1", "attestd-2"].map((service) => {
      const logs = podman(["logs", `${RUN}_${service}_1`], `podman logs ${service}`);
      return /"keyId":"([0-9a-f]+)"[^\n]*"msg":"secrets key in use"/.exec(logs)?.[1];
    });
    assert.ok(keyIds[0], `attestd-1 logged the key it uses${diagnostics()}`);
    assert.equal(keyIds[1], keyIds[0], "both instances use the same secrets key");
  });
});
