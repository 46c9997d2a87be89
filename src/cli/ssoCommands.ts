import { Command, Option } from "commander";
import { systemClock } from "../clock.ts";
import type { TenantRole } from "../domain/portal.ts";
import { SsoMappings, type SsoIdentityRef } from "../portal/ssoMappings.ts";
import { addSettings, CliError, refusals, STORAGE_SETTINGS, withOperator, withStores, type CommandDefinitions } from "./options.ts";

/**
 * `attestd sso map|unmap|list` (docs/sso.md, "Mapping people"): an operator's mappings of the identity provider's
 * people to a tenant and a role, the same service as the portal's /portal/api/sso/mappings.
 */
export const commands: CommandDefinitions = { sso: defineSso };

const json = (v: unknown) => process.stdout.write(JSON.stringify(v, null, 2) + "\n");

/** --subject or --email, exactly one */
function refOf(o: { subject?: string; email?: string }): SsoIdentityRef {
  if ((o.subject === undefined) === (o.email === undefined)) throw new CliError("name the person with --subject SUB or --email EMAIL (one of the two)");
  return o.subject !== undefined ? { subject: o.subject } : { email: o.email! };
}

function defineSso(sso: Command): void {
  addSettings(
    sso
      .command("map")
      .description(
        "map a person of the identity provider, by subject (the ID token's sub) or by email (used only when the provider says it is verified), to a tenant and role; replaces their mapping. Prints it as JSON",
      )
      .option("--subject <sub>", "the provider's subject for the person")
      .option("--email <email>", "the person's email, as the provider gives it")
      .requiredOption("--tenant <name>", "tenant name")
      .addOption(new Option("--role <role>", "admin or viewer (single sign-on never makes an operator)").choices(["admin", "viewer"]).makeOptionMandatory()),
    STORAGE_SETTINGS,
  ).action(async (o: { subject?: string; email?: string; tenant: string; role: TenantRole }, cmd: Command) => {
    const ref = refOf(o);
    await withOperator(cmd, async (stores, by) => {
      const m = await refusals(() => new SsoMappings(stores.durable, systemClock).map(ref, o.tenant, o.role, by));
      json(m);
      process.stderr.write(`${m.kind} ${m.value} signs in through the provider as ${m.role} of tenant ${m.tenant}\n`);
    });
  });

  addSettings(
    sso
      .command("unmap")
      .description("remove a person's mapping: their next sign-in through the provider is refused (unless the claims map them)")
      .option("--subject <sub>", "the provider's subject for the person")
      .option("--email <email>", "the person's email"),
    STORAGE_SETTINGS,
  ).action(async (o: { subject?: string; email?: string }, cmd: Command) => {
    const ref = refOf(o);
    await withOperator(cmd, async (stores, by) => {
      if (!(await refusals(() => new SsoMappings(stores.durable, systemClock).unmap(ref, by)))) throw new CliError(`no mapping for ${o.subject ?? o.email}`);
      process.stderr.write(`mapping of ${o.subject ?? o.email} removed\n`);
    });
  });

  addSettings(sso.command("list").description("list the operators' single sign-on mappings as JSON"), STORAGE_SETTINGS).action(async (_o: object, cmd: Command) => {
    await withStores(cmd, async (stores) => json(await new SsoMappings(stores.durable, systemClock).list()));
  });
}
