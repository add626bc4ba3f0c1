// pass@k computed exactly (big integers), to check the floating-point estimator against.

function binomial(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let result = 1n;
  for (let i = 1; i <= k; i++) result = (result * BigInt(n - k + i)) / BigInt(i);
  return result;
}

/** 1 - C(n-c, k) / C(n, k), the ratio divided exactly then rounded once. */
export function exactPassAtK(n: number, c: number, k: number): number {
  const fail = binomial(n - c, k);
  const all = binomial(n, k);
  // 40 decimal digits of the ratio, then one rounding to a double.
  const scaled = (fail * 10n ** 40n) / all;
  return 1 - Number(scaled) / 1e40;
}
