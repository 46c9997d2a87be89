import type { Command } from "commander";
import { systemClock } from "../clock.ts";
import type { Tenant } from "../domain/tenants.ts";
import { POLICY_CACHE_MS, TenantPolicies } from "../services/tenantPolicies.ts";
import type { Stores } from "../store/types.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import { addSettings, CliError, readFileOrFail, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, type CommandDefinitions } from "./options.ts";

/** `attestd policy show|set|versions|rollback` (docs/policy.md): the same TenantPolicies as the admin API and the portal. */
export const commands: CommandDefinitions = { policy: definePolicy };

async function withPolicies<T>(cmd: Command, tenantName: string, fn: (policies: TenantPolicies, tenant: Tenant, by: ChangeActor) => Promise<T>): Promise<T> {
  // the operator's OS user is the author of what it stores (`operator:<user>`), and the actor in the audit trail
  return withOperator(cmd, async (stores: Stores, by) => fn(new TenantPolicies(stores.durable, systemClock), await tenantNamed(stores, tenantName), by));
}

function versionNumber(value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new CliError(`a version is a whole number from 1, not "${value}"`);
  return Number(value);
}

const print = (value: unknown) => process.stdout.write(JSON.stringify(value, null, 2) + "\n");
const bound = `${POLICY_CACHE_MS / 1000} s`;

function definePolicy(policy: Command): void {
  addSettings(
    policy
      .command("show")
      .description("print the tenant's policy version in force (or --number N) as JSON: version, time, author, document")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--number <n>", "an older version, by its number", versionNumber),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; number?: number }, cmd: Command) => {
    await withPolicies(cmd, o.tenant, async (policies, tenant) => {
      const v = o.number !== undefined ? await refusals(() => policies.version(tenant, o.number!)) : await policies.current(tenant);
      if (!v) throw new CliError(`tenant ${tenant.name} has no stored policy: the operator's defaults (--android-policy) apply`);
      print(v);
    });
  });

  addSettings(
    policy
      .command("set")
      .description(`store FILE (a JSON policy document, docs/policy.md) as the tenant's next version; running servers apply it within ${bound}`)
      .argument("<file>", "the policy document, JSON")
      .requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (file: string, o: { tenant: string }, cmd: Command) => {
    const text = readFileOrFail(file, "FILE", "a JSON policy document (docs/policy.md)").toString("utf8");
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (e) {
      throw new CliError(`${file} is not JSON: ${(e as Error).message}`);
    }
    await withPolicies(cmd, o.tenant, async (policies, tenant, by) => {
      const v = await refusals(() => policies.set(tenant, document, by));
      print(v);
      process.stderr.write(`policy version ${v.version} stored for tenant ${tenant.name}\n`);
    });
  });

  addSettings(
    policy.command("versions").description("list the tenant's policy versions as JSON, newest first").requiredOption("--tenant <name>", "tenant name"),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string }, cmd: Command) => {
    await withPolicies(cmd, o.tenant, async (policies, tenant) => print(await policies.versions(tenant)));
  });

  addSettings(
    policy
      .command("rollback")
      .description(`store the document of an older version as the tenant's next version; running servers apply it within ${bound}`)
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--to <n>", "the version whose document to restore", versionNumber),
    STORAGE_SETTINGS,
  ).action(async (o: { tenant: string; to: number }, cmd: Command) => {
    await withPolicies(cmd, o.tenant, async (policies, tenant, by) => {
      const v = await refusals(() => policies.rollback(tenant, o.to, by));
      print(v);
      process.stderr.write(`policy version ${v.version} (the document of version ${o.to}) stored for tenant ${tenant.name}\n`);
    });
  });
}
