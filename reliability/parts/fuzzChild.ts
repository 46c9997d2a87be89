import { fuzzFormat, type FuzzFormat } from "./fuzz.ts";

/**
 * One format's fuzz run in a process of its own (`reliability/run.ts` starts one per format), so the two formats
 * use both cores and each peak RSS is that format's alone. Arguments: FORMAT CASES SEED RSS_LIMIT_MB. Prints
 * progress lines on stderr and the FuzzResult as JSON on stdout.
 */
const [format, cases, seed, rssLimitMb] = process.argv.slice(2);
const result = await fuzzFormat({
  format: format as FuzzFormat,
  cases: Number(cases),
  seed: Number(seed),
  rssLimitMb: Number(rssLimitMb),
  progress: (n) => process.stderr.write(`fuzz ${format}: ${n} / ${cases}\n`),
});
process.stdout.write(JSON.stringify(result) + "\n");
