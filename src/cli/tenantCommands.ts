import { Command, Option } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import { ApiKeyAdmin } from "../services/apiKeyAdmin.ts";
import type { TenantState } from "../domain/tenants.ts";
import { addSettings, CliError, STORAGE_SETTINGS, withStores } from "./options.ts";

const STATES: TenantState[] = ["active", "inactive", "blocked"];

function randomCustomerId(): string {
  // 10 digits, first non-zero, from the CSPRNG
  const digits = Array.from(cryptoRng.bytes(10), (b) => String(b % 10));
  if (digits[0] === "0") digits[0] = "1";
  return digits.join("");
}

/** `attestd tenant ...` and `attestd key ...` (operator.md). */
export function registerTenantCommands(program: Command): void {
  const tenant = program.command("tenant").description("manage tenants");

  addSettings(
    tenant
      .command("create <name>")
      .description("create a tenant and print it as JSON")
      .addOption(new Option("--kind <kind>", "customer or reseller").choices(["customer", "reseller"]).default("customer"))
      .option("--customer-id <digits>", "customer ID (digits); random when omitted"),
    STORAGE_SETTINGS,
  ).action(async (name: string, opts: { kind: "customer" | "reseller"; customerId?: string }, cmd: Command) => {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new CliError("tenant name must be 1-64 of A-Z a-z 0-9 . _ -");
    if (opts.customerId !== undefined && !/^\d{1,20}$/.test(opts.customerId)) {
      throw new CliError("--customer-id must be 1-20 digits");
    }
    await withStores(cmd, async ({ durable }) => {
      if (await durable.getTenantByName(name)) throw new CliError(`tenant "${name}" already exists`);
      const customerId = opts.customerId ?? randomCustomerId();
      if (await durable.getTenantByCustomerId(customerId)) throw new CliError(`customer ID ${customerId} is taken`);
      const t = await durable.createTenant({
        tenantId: "t_" + cryptoRng.bytes(9).toString("base64url"),
        name,
        customerId,
        kind: opts.kind,
        createdAt: new Date().toISOString(),
      });
      process.stdout.write(JSON.stringify(t, null, 2) + "\n");
    });
  });

  addSettings(
    tenant
      .command("set-state <name> <state>")
      .description(`set a tenant's state (${STATES.join(" | ")})`),
    STORAGE_SETTINGS,
  ).action(async (name: string, state: string, _opts: unknown, cmd: Command) => {
    if (!STATES.includes(state as TenantState)) throw new CliError(`state must be one of ${STATES.join(", ")}`);
    await withStores(cmd, async ({ durable }) => {
      if (!(await durable.setTenantState(name, state as TenantState))) throw new CliError(`no tenant named "${name}"`);
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
    await withStores(cmd, async ({ durable }) => {
      if (!(await durable.setEnrollmentEnabled(name, !opts.disable))) throw new CliError(`no tenant named "${name}"`);
      process.stderr.write(`tenant ${name}: enrollment ${opts.disable ? "disabled" : "enabled"}\n`);
    });
  });

  const key = program.command("key").description("manage Part A API keys");
  addSettings(
    key
      .command("create")
      .description("create an API key for a tenant; prints the key alone on stdout (shown once)")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--rps <n>", "requests per second for this key (default: the server's --rps)")
      .option("--burst <n>", "burst for this key (default: the server's --burst)")
      .option("--label <text>", "what the key is for, shown in lists and the portal"),
    STORAGE_SETTINGS,
  ).action(async (opts: { tenant: string; rps?: string; burst?: string; label?: string }, cmd: Command) => {
    const rps = opts.rps === undefined ? 0 : Number(opts.rps);
    const burst = opts.burst === undefined ? 0 : Number(opts.burst);
    if (!(rps >= 0) || !Number.isFinite(rps)) throw new CliError("--rps must be a positive number");
    if (!Number.isInteger(burst) || burst < 0) throw new CliError("--burst must be a positive integer");
    await withStores(cmd, async ({ durable }) => {
      const t = await durable.getTenantByName(opts.tenant);
      if (!t) throw new CliError(`no tenant named "${opts.tenant}"`);
      const { key, record } = await new ApiKeyAdmin(durable, systemClock, cryptoRng).create(t, { rps, burst, ...(opts.label ? { label: opts.label } : {}) });
      process.stderr.write(`key id ${record.keyId} for tenant ${t.name}; store the key now, it is not shown again\n`);
      process.stdout.write(key + "\n");
    });
  });

  addSettings(key.command("revoke <keyId>").description("revoke an API key by its id"), STORAGE_SETTINGS).action(
    async (keyId: string, _opts: unknown, cmd: Command) => {
      await withStores(cmd, async ({ durable }) => {
        if (!(await new ApiKeyAdmin(durable, systemClock, cryptoRng).revoke(undefined, keyId))) {
          throw new CliError(`no active key with id "${keyId}"`);
        }
        process.stderr.write(`key ${keyId} revoked\n`);
      });
    },
  );

  addSettings(key.command("list").description("list a tenant's keys (ids, limits, state; never secrets)").requiredOption("--tenant <name>", "tenant name"), STORAGE_SETTINGS).action(
    async (opts: { tenant: string }, cmd: Command) => {
      await withStores(cmd, async ({ durable }) => {
        const t = await durable.getTenantByName(opts.tenant);
        if (!t) throw new CliError(`no tenant named "${opts.tenant}"`);
        const keys = await new ApiKeyAdmin(durable, systemClock, cryptoRng).list(t);
        process.stdout.write(JSON.stringify(keys, null, 2) + "\n");
      });
    },
  );
}
