/**
 * The one word for each state of a trust source, wherever people read it: the operators' trust page, every
 * overview, /portal/api/trust and the docs of /readyz (whose machine states map onto these: `ok` is current or
 * built in; stale, missing and held are the same words). A new source (App Attest, when it lands) uses these
 * words, not new ones.
 */
export const TRUST_STATES = {
  current: "in hand, and obtained from its source within its maximum age (or, for a file read at start-up, read and usable)",
  "built in": "shipped with attestd: always present, never stale",
  held: "a new copy was held back for losing too many entries; the copy in force is used and keeps ageing",
  stale: "older than its maximum age: what depends on it fails closed",
  missing: "nothing in hand (never obtained, or not configured where it is required): what depends on it fails closed",
  failed: "configured, but unusable now (a file that anchors nothing, Google refusing or unreachable on the last try)",
  "not set": "optional and not configured: nothing depends on it",
} as const;

export type TrustState = keyof typeof TRUST_STATES;

/** The states that leave what depends on the source working. */
export const TRUST_STATES_OK: readonly TrustState[] = ["current", "built in", "held", "not set"];
