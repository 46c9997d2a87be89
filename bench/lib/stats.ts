/** Nearest-rank percentile of an ascending array (0 for an empty one). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Geometric mean (for averaging ratios across chains). */
export function geomean(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  return Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
}
