import { closeSync, openSync, unlinkSync, writeSync } from "node:fs";
import { Argument, Command, Option } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import { accessTokenRequest, apiToken, formatClientKeys, parseClientKeys, type ClientKeys } from "../enrollment/clientJwt.ts";
import { ClientAdmin, ClientAdminError, summarise } from "../enrollment/clients.ts";
import { encryptForTenant, TenantKeyService } from "../enrollment/tenantKeys.ts";
import { PortalAccounts } from "../portal/accounts.ts";
import { RateLimiter } from "../services/rateLimiter.ts";
import type { Stores } from "../store/types.ts";
import { publicBaseUrl, type Config } from "../config.ts";
import { fileProblem, pathMessage } from "../errors/operatorError.ts";
import { addSettings, CliError, readFileOrFail, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, withStores, type CommandDefinitions } from "./options.ts";
import { openSecrets } from "../secrets/openSecrets.ts";

function portalAccounts(stores: Stores, config: Config): PortalAccounts {
  return new PortalAccounts(stores.durable, systemClock, cryptoRng, new RateLimiter(stores.rateLimits, systemClock, { rps: 1, burst: 1 }), publicBaseUrl(config));
}

function admin(stores: Stores): ClientAdmin {
  return new ClientAdmin(stores.enrollment, systemClock, cryptoRng);
}

/** ClientAdmin's refusals are the operator's to fix: one line, no stack. */
async function operatorErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ClientAdminError) throw new CliError(e.message);
    throw e;
  }
}

function positive(v: string | undefined, flag: string, integer: boolean): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new CliError(`${flag} must be a positive ${integer ? "integer" : "number"}`);
  }
  return n;
}

/** ISO 8601, or an age such as 30s, 15m, 2h, 7d (that long before now). */
export function parseSince(s: string, nowMs: number): string {
  const age = /^(\d+)([smhd])$/.exec(s);
  if (age) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as "s" | "m" | "h" | "d"];
    return new Date(nowMs - Number(age[1]) * unit).toISOString();
  }
  const t = Date.parse(s);
  if (Number.isNaN(t)) throw new CliError(`--since must be ISO 8601 or an age like 15m, 2h, 7d`);
  return new Date(t).toISOString();
}

function readKeys(file: string): ClientKeys {
  const expected = "the keys.json attestd client create --out FILE wrote";
  const text = readFileOrFail(file, "--keys FILE", expected).toString("utf8");
  try {
    return parseClientKeys(text);
  } catch (e) {
    // not the parser's words: they quote the file, which may be anything (a key, a password file)
    throw new CliError(pathMessage("--keys FILE", file, e instanceof SyntaxError ? "not JSON" : (e as Error).message, expected));
  }
}

/** `attestd client ...`, `attestd user ...`, `attestd activity`, `attestd encrypt` (operator.md, enrollment.md). */
export const commands: CommandDefinitions = { client: defineClient, user: defineUser, activity: defineActivity, encrypt: defineEncrypt };

function defineClient(client: Command): void {
  addSettings(
    client
      .command("create")
      .description("create an API client for a user of a tenant; writes its keys.json once (mode 0600)")
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--user <email>", "the user the client acts for (registered if new)")
      .requiredOption("--out <file>", "where to write keys.json (must not exist)")
      .option("--read-only", "the client may only read (GET)")
      .option("--rps <n>", "requests per second (default 10)")
      .option("--burst <n>", "burst (default 20, or 2 × --rps)"),
    STORAGE_SETTINGS,
  ).action(
    async (o: { tenant: string; user: string; out: string; readOnly?: boolean; rps?: string; burst?: string }, cmd: Command) => {
      const rps = positive(o.rps, "--rps", false);
      const burst = positive(o.burst, "--burst", true);
      // claim the file first: an existing keys.json is never overwritten, and no client is made without its keys
      let fd: number;
      try {
        fd = openSync(o.out, "wx", 0o600);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        const problem = code === "EEXIST" ? "already exists (keys are written once; give a new path)" : code === "ENOENT" ? "no such directory to write it in" : fileProblem(e);
        throw new CliError(pathMessage("--out FILE", o.out, problem));
      }
      let written = false;
      try {
        await withOperator(cmd, async (stores, by) => {
          const tenant = await tenantNamed(stores, o.tenant);
          const made = await operatorErrors(() =>
            admin(stores).createClient(tenant, {
              email: o.user,
              readOnly: o.readOnly ?? false,
              ...(rps !== undefined ? { rps } : {}),
              ...(burst !== undefined ? { burst } : {}),
            }, by),
          );
          writeSync(fd, formatClientKeys(made.keys));
          written = true;
          process.stderr.write(`client ${made.client.clientId} for ${o.user} of ${tenant.name}; keys in ${o.out}, shown nowhere else\n`);
          process.stdout.write(JSON.stringify({ ...summarise(made.client), tenant: tenant.name, user: o.user }, null, 2) + "\n");
        });
      } finally {
        closeSync(fd);
        if (!written) unlinkSync(o.out);
      }
    },
  );

  addSettings(
    client.command("list").description("list a tenant's clients (never keys), with their user's email and state").requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string }, cmd: Command) => {
    await withStores(cmd, async (stores) => {
      const clients = await admin(stores).list(await tenantNamed(stores, o.tenant));
      process.stdout.write(JSON.stringify(clients, null, 2) + "\n");
    });
  });

  addSettings(
    client.command("revoke <clientId>").description("revoke a client: its access tokens stop working at once; it stays listed as revoked"),
    STORAGE_SETTINGS,
  ).action(async (clientId: string, _o: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      if (!(await admin(stores).revoke(undefined, clientId, by))) throw new CliError(`no active client "${clientId}"`);
      process.stderr.write(`client ${clientId} revoked\n`);
    });
  });

  addSettings(
    client
      .command("read-only <clientId>")
      .description("make a client read-only (GET only), or with --off let it write again; applies from its next request")
      .option("--off", "let the client write again"),
    STORAGE_SETTINGS,
  ).action(async (clientId: string, o: { off?: boolean }, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      if (!(await admin(stores).setReadOnly(undefined, clientId, !o.off, by))) throw new CliError(`no active client "${clientId}"`);
      process.stderr.write(`client ${clientId} is ${o.off ? "no longer read-only" : "read-only"}\n`);
    });
  });

  addSettings(
    client.command("delete <clientId>").description("delete a client; its access tokens stop working at once"),
    STORAGE_SETTINGS,
  ).action(async (clientId: string, _o: unknown, cmd: Command) => {
    await withStores(cmd, async (stores) => {
      if (!(await stores.enrollment.deleteClient(clientId))) throw new CliError(`no client "${clientId}"`);
      process.stderr.write(`client ${clientId} deleted\n`);
    });
  });

  // The two client-side helpers below need no store: they do what an integrator's code does with keys.json.
  client
    .command("token-request")
    .description("print a signed POST /svc/v1/auth/accesstoken body for the client in a keys file")
    .requiredOption("--keys <file>", "keys.json from `client create`")
    .option("--validity <minutes>", "access token validity, 1..30", "30")
    .action(async (o: { keys: string; validity: string }) => {
      const validityMinutes = Number(o.validity);
      if (!Number.isInteger(validityMinutes) || validityMinutes < 1 || validityMinutes > 30) {
        throw new CliError("--validity must be 1..30");
      }
      const body = await accessTokenRequest(readKeys(o.keys), { nowMs: Date.now(), validityMinutes });
      process.stdout.write(JSON.stringify(body) + "\n");
    });

  client
    .command("api-token")
    .description("print a fresh x-vendor-apitoken header value (one per request: each has a new jti)")
    .requiredOption("--keys <file>", "keys.json from `client create`")
    .requiredOption("--access-token <token>", "the accessToken from POST /svc/v1/auth/accesstoken")
    .action(async (o: { keys: string; accessToken: string }) => {
      process.stdout.write((await apiToken(readKeys(o.keys), o.accessToken, { nowMs: Date.now() })) + "\n");
    });

}

function defineUser(user: Command): void {
  addSettings(
    user.command("register <email>").description("register a user (again)").requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (email: string, o: { tenant: string }, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      const u = await operatorErrors(async () => admin(stores).registerUser(await tenantNamed(stores, o.tenant), email, by));
      process.stdout.write(JSON.stringify(u, null, 2) + "\n");
    });
  });
  addSettings(
    user
      .command("deregister <email>")
      .description("deregister a user: its clients are refused with USER_AUTHENTICATION_FAIL")
      .requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (email: string, o: { tenant: string }, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      await operatorErrors(async () => admin(stores).deregisterUser(await tenantNamed(stores, o.tenant), email, by));
      process.stderr.write(`user ${email} deregistered\n`);
    });
  });
  // Portal accounts are the same people (one email, one record): invited to the portal, they sign in there. These
  // commands and the portal's Users page are two views of PortalAccounts (src/portal/accounts.ts).
  addSettings(
    user
      .command("invite")
      .description("invite a person to the portal: prints a one-time sign-in link (24 h) where they set a password")
      .requiredOption("--email <email>", "their email address")
      .option("--tenant <name>", "the tenant they belong to (not with --operator)")
      .addOption(new Option("--role <role>", "what they may do in the tenant").choices(["admin", "viewer"]).default("admin"))
      .option("--operator", "an operator: sees and runs every tenant, belongs to none"),
    [...STORAGE_SETTINGS, "host", "port", "publicUrl"],
  ).action(async (o: { email: string; tenant?: string; role: "admin" | "viewer"; operator?: boolean }, cmd: Command) => {
    if (Boolean(o.operator) === (o.tenant !== undefined)) throw new CliError("give --tenant NAME, or --operator (not both)");
    await withOperator(cmd, async (stores, by, config) => {
      const inv = await refusals(() =>
        portalAccounts(stores, config).invite({ email: o.email, role: o.operator ? "operator" : o.role, ...(o.tenant !== undefined ? { tenant: o.tenant } : {}) }, by),
      );
      process.stdout.write(`${inv.link}\n`);
      process.stderr.write(`${inv.user.email} (${inv.user.role}) may set a password with that link until ${inv.expiresAt}; it works once\n`);
    });
  });
  addSettings(
    user
      .command("reset-link <email>")
      .description("a one-time link (24 h) where a person sets a new password; prints it; their earlier links stop working, and using it ends every session of theirs"),
    [...STORAGE_SETTINGS, "host", "port", "publicUrl"],
  ).action(async (email: string, _o: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by, config) => {
      const link = await refusals(() => portalAccounts(stores, config).resetLink({ email }, by));
      process.stdout.write(`${link.link}\n`);
      process.stderr.write(`${link.user.email} may set a new password with that link until ${link.expiresAt}; it works once and signs them out everywhere\n`);
    });
  });
  addSettings(
    user.command("disable <email>").description("disable a person's portal account, void their sign-in links and end all of their sessions at once"),
    STORAGE_SETTINGS,
  ).action(async (email: string, _o: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by, config) => {
      const ended = await refusals(() => portalAccounts(stores, config).disable({ email }, by));
      process.stderr.write(`${email} disabled; ${ended} session(s) ended\n`);
    });
  });
  addSettings(
    user.command("enable <email>").description("let a disabled person sign in to the portal again (with the password and passkeys they had)"),
    STORAGE_SETTINGS,
  ).action(async (email: string, _o: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by, config) => {
      const user = await refusals(() => portalAccounts(stores, config).enable({ email }, by));
      process.stderr.write(`${user.email} is ${user.state}\n`);
    });
  });
  addSettings(
    user
      .command("set-role <email>")
      .description("change a tenant user's portal role; it applies to their open sessions at their next request")
      .addArgument(new Argument("<role>", "admin (everything of the tenant) or viewer (reads only)").choices(["admin", "viewer"])),
    STORAGE_SETTINGS,
  ).action(async (email: string, role: "admin" | "viewer", _o: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by, config) => {
      const user = await refusals(() => portalAccounts(stores, config).setRole({ email }, role, by));
      process.stderr.write(`${user.email} is now ${user.role}\n`);
    });
  });
  addSettings(
    user
      .command("list-portal")
      .description("list the people who sign in to the portal, as JSON (the Users page's list)")
      .option("--tenant <name>", "only this tenant's people")
      .option("--operators", "only the operators"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant?: string; operators?: boolean }, cmd: Command) => {
    await withStores(cmd, async (stores, config) => {
      const people = await refusals(() => portalAccounts(stores, config).list({ tenant: o.tenant, operators: o.operators }));
      process.stdout.write(JSON.stringify(people, null, 2) + "\n");
    });
  });
  addSettings(
    user.command("list").description("list a tenant's enrollment users (portal accounts: user list-portal)").requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string }, cmd: Command) => {
    await withStores(cmd, async (stores) => {
      const users = await stores.enrollment.listUsers((await tenantNamed(stores, o.tenant)).tenantId);
      process.stdout.write(JSON.stringify(users, null, 2) + "\n");
    });
  });

}

const ACTIVITY_KINDS = ["api", "portal", "all"];

function defineActivity(activity: Command): void {
  addSettings(
    activity
      .description("print the activity log (Part A and B requests), one JSON object per line, oldest first")
      .option("--tenant <name>", "only this tenant's requests")
      .option("--error-id <id>", "only the request that answered with this errorId")
      .option("--since <time>", "ISO 8601, or an age such as 15m, 2h, 7d")
      .addOption(new Option("--kind <kind>", "api (Part A and B requests), portal (page views), or all").choices(ACTIVITY_KINDS).default("all"))
      .option("--key <id>", "only the requests of this API key id (Part A) or enrollment client id (Part B)")
      .option("--limit <n>", "the most recent N entries", "1000"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant?: string; errorId?: string; since?: string; kind: string; key?: string; limit: string }, cmd: Command) => {
    const limit = positive(o.limit, "--limit", true)!;
    const since = o.since === undefined ? undefined : parseSince(o.since, Date.now());
    await withStores(cmd, async (stores) => {
      const tenantId = o.tenant === undefined ? undefined : (await tenantNamed(stores, o.tenant)).tenantId;
      const entries = await stores.durable.queryActivity({
        ...(tenantId ? { tenantId } : {}),
        ...(o.errorId ? { errorId: o.errorId } : {}),
        ...(since ? { since } : {}),
        ...(o.kind === "all" ? {} : { kind: o.kind as "api" | "portal" }),
        ...(o.key ? { clientId: o.key } : {}),
        limit,
      });
      for (const e of entries.reverse()) process.stdout.write(JSON.stringify(e) + "\n");
    });
  });

}

function defineEncrypt(encrypt: Command): void {
  addSettings(
    encrypt
      .argument("<text>")
      .description("encrypt TEXT to a tenant's encryption key (as a client does for userPassword); prints base64")
      .requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (text: string, o: { tenant: string }, cmd: Command) => {
    await withStores(cmd, async (stores, config) => {
      const tenant = await tenantNamed(stores, o.tenant);
      // the first use makes the tenant's key pair, whose private key is sealed with the same key `serve` uses
      const { box } = await openSecrets(stores.secrets, config);
      const publicKey = await new TenantKeyService(stores.enrollment, systemClock, box).publicKey(tenant.tenantId);
      process.stdout.write(encryptForTenant(publicKey, text) + "\n");
    });
  });
}
