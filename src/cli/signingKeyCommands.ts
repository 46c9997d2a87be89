import type { Command } from "commander";
import { systemClock } from "../clock.ts";
import type { EarAlgorithm } from "../domain/signingKeys.ts";
import { rotateSigningKey } from "../results/signingKeys.ts";
import { openSecrets } from "../secrets/openSecrets.ts";
import { addSettings, STORAGE_SETTINGS, withOperator, withStores, type CommandDefinitions } from "./options.ts";

/** `attestd keys ...`: the keys attestd signs its results (EARs) with (docs/results.md, "Keys and rotation"). */
export const commands: CommandDefinitions = { keys: defineKeys };

function defineKeys(keys: Command): void {
  addSettings(
    keys
      .command("rotate")
      .description(
        "make a new result-signing key current; the previous one stays published for --ear-key-grace seconds. " +
          "Prints the new key as JSON; running servers sign with it within --ear-key-refresh seconds",
      ),
    [...STORAGE_SETTINGS, "earAlg", "earKeyGrace"],
  ).action(async (_opts: unknown, cmd: Command) => {
    await withOperator(cmd, async (stores, by, config) => {
      // the new private key is sealed with the same secrets key the servers use (--secrets-key-file)
      const { box } = await openSecrets(stores.secrets, config);
      const rotated = await rotateSigningKey(stores.signingKeys, systemClock, box, {
        alg: config.earAlg as EarAlgorithm,
        graceSeconds: config.earKeyGrace,
      }, by);
      process.stderr.write(
        rotated.retired
          ? `key ${rotated.kid} is current; ${rotated.retired} stays published until ${rotated.retiresAt}\n`
          : `key ${rotated.kid} is current (there was none before)\n`,
      );
      process.stdout.write(JSON.stringify(rotated, null, 2) + "\n");
    });
  });

  addSettings(keys.command("list").description("list the published result-signing keys (kid, algorithm, dates; never private keys)"), STORAGE_SETTINGS).action(
    async (_opts: unknown, cmd: Command) => {
      await withStores(cmd, async (stores) => {
        const list = await stores.signingKeys.listSigningKeys(new Date(systemClock.nowMs()).toISOString());
        const shown = list.map((k) => ({ kid: k.kid, alg: k.alg, createdAt: k.createdAt, retiresAt: k.retiresAt, current: k.retiresAt === null }));
        process.stdout.write(JSON.stringify(shown, null, 2) + "\n");
      });
    },
  );
}
