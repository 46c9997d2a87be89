import { Command, Option } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import { ApiKeyAdmin, type KeyEdit } from "../services/apiKeyAdmin.ts";
import { TENANT_STATES, TenantAdmin } from "../services/tenantAdmin.ts";
import type { Config } from "../config.ts";
import type { Stores } from "../store/types.ts";
import type { TenantState } from "../domain/tenants.ts";
import { addSettings, CliError, refusals, STORAGE_SETTINGS, withOperator, withStores, type CommandDefinitions } from "./options.ts";
import { EVENT_WRITING_SETTINGS, webhookPlannerFor } from "./webhookCommands.ts";

const tenants = (stores: Stores) => new TenantAdmin(stores.durable, systemClock, cryptoRng);
// key.created / key.revoked are written with the key, as the server writes them (docs/events.md)
const keys = (stores: Stores, config: Config) => new ApiKeyAdmin(stores.durable, systemClock, cryptoRng, undefined, webhookPlannerFor(stores, config));

function number(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n)) throw new CliError(`${flag} must be a number`);
  return n;
}

/** a comma-separated list; "" is the empty list (no such restriction) */
const list = (v: string | undefined) => (v === undefined ? undefined : v.split(",").map((x) => x.trim()).filter((x) => x !== ""));

/** `attestd tenant ...` and `attestd key ...` (operator.md). */
export const commands: CommandDefinitions = { tenant: defineTenant, key: defineKey };

function defineTenant(tenant: Command): void {
  addSettings(
    tenant
      .command("create <name>")
      .description("create a tenant and print it as JSON")
      .addOption(new Option("--kind <kind>", "customer or reseller").choices(["customer", "reseller"]).default("customer"))
      .option("--customer-id <digits>", "customer ID (digits); random when omitted"),
    STORAGE_SETTINGS,
  ).action(async (name: string, opts: { kind: "customer" | "reseller"; customerId?: string }, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      const t = await refusals(() => tenants(stores).create({ name, kind: opts.kind, ...(opts.customerId !== undefined ? { customerId: opts.customerId } : {}) }, by));
      process.stdout.write(JSON.stringify(t, null, 2) + "\n");
    });
  });

  addSettings(tenant.command("list").description("list every tenant as JSON"), STORAGE_SETTINGS).action(async (_opts: unknown, cmd: Command) => {
    await withStores(cmd, async (stores) => {
      process.stdout.write(JSON.stringify(await tenants(stores).list(), null, 2) + "\n");
    });
  });

  addSettings(
    tenant
      .command("set-state <name> <state>")
      .description(`set a tenant's state (${TENANT_STATES.join(" | ")})`),
    STORAGE_SETTINGS,
  ).action(async (name: string, state: string, _opts: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      await refusals(() => tenants(stores).setState(name, state as TenantState, by));
      process.stderr.write(`tenant ${name} is now ${state}\n`);
    });
  });

  addSettings(
    tenant
      .command("enable-enrollment <name>")
      .description("allow a reseller tenant to use the enrollment API (resellers are blocked by default)")
      .option("--disable", "block it again"),
    STORAGE_SETTINGS,
  ).action(async (name: string, opts: { disable?: boolean }, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      await refusals(() => tenants(stores).setEnrollment(name, !opts.disable, by));
      process.stderr.write(`tenant ${name}: enrollment ${opts.disable ? "disabled" : "enabled"}\n`);
    });
  });

}

function defineKey(key: Command): void {
  addSettings(
    key
      .command("create")
      .description("create an API key for a tenant; prints the key alone on stdout (shown once)")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--rps <n>", "requests per second for this key (default: the server's --rps)")
      .option("--burst <n>", "burst for this key (default: the server's --burst)")
      .option("--label <text>", "what the key is for, shown in lists and the portal"),
    EVENT_WRITING_SETTINGS,
  ).action(async (opts: { tenant: string; rps?: string; burst?: string; label?: string }, cmd: Command) => {
    const rps = number(opts.rps, "--rps");
    const burst = number(opts.burst, "--burst");
    await withOperator(cmd, async (stores, by, config) => {
      const t = await stores.durable.getTenantByName(opts.tenant);
      if (!t) throw new CliError(`no tenant named "${opts.tenant}"`);
      const { key, record } = await refusals(() =>
        keys(stores, config).create(t, { ...(rps !== undefined ? { rps } : {}), ...(burst !== undefined ? { burst } : {}), ...(opts.label ? { label: opts.label } : {}) }, by),
      );
      process.stderr.write(`key id ${record.keyId} for tenant ${t.name}; store the key now, it is not shown again\n`);
      process.stdout.write(key + "\n");
    });
  });

  addSettings(key.command("revoke <keyId>").description("revoke an API key by its id"), EVENT_WRITING_SETTINGS).action(
    async (keyId: string, _opts: unknown, cmd: Command) => {
      await withOperator(cmd, async (stores, by, config) => {
        if (!(await keys(stores, config).revoke(undefined, keyId, by))) {
          throw new CliError(`no active key with id "${keyId}"`);
        }
        process.stderr.write(`key ${keyId} revoked\n`);
      });
    },
  );

  addSettings(key.command("list").description("list a tenant's keys (ids, limits, state; never secrets)").requiredOption("--tenant <name>", "tenant name"), STORAGE_SETTINGS).action(
    async (opts: { tenant: string }, cmd: Command) => {
      await withStores(cmd, async (stores, config) => {
        const t = await stores.durable.getTenantByName(opts.tenant);
        if (!t) throw new CliError(`no tenant named "${opts.tenant}"`);
        process.stdout.write(JSON.stringify(await keys(stores, config).list(t), null, 2) + "\n");
      });
    },
  );

  addSettings(
    key
      .command("set <keyId>")
      .description("change a key's limits, label or IP / referer restrictions (what the portal's edit changes); prints the key as JSON")
      .option("--rps <n>", "requests per second (0: the server's --rps)")
      .option("--burst <n>", "burst (0 or absent with --rps: twice the rps)")
      .option("--label <text>", "what the key is for (\"\": none)")
      .option("--ip <list>", "comma-separated addresses or CIDR blocks the key may be used from (\"\": any)")
      .option("--referer <list>", "comma-separated Referer patterns, * as a wildcard (\"\": any)"),
    STORAGE_SETTINGS,
  ).action(async (keyId: string, o: { rps?: string; burst?: string; label?: string; ip?: string; referer?: string }, cmd: Command) => {
    const edit: KeyEdit = {};
    const rps = number(o.rps, "--rps");
    const burst = number(o.burst, "--burst");
    if (rps !== undefined) edit.rps = rps;
    if (burst !== undefined) edit.burst = burst;
    if (o.label !== undefined) edit.label = o.label;
    const ips = list(o.ip);
    const referers = list(o.referer);
    if (ips !== undefined) edit.ipAddresses = ips;
    if (referers !== undefined) edit.referers = referers;
    if (Object.keys(edit).length === 0) throw new CliError("give at least one of --rps, --burst, --label, --ip, --referer");
    await withOperator(cmd, async (stores, by, config) => {
      const after = await refusals(() => keys(stores, config).update(undefined, keyId, edit, by));
      if (!after) throw new CliError(`no active key with id "${keyId}"`);
      process.stdout.write(JSON.stringify(after, null, 2) + "\n");
    });
  });
}
