/**
 * A value made on first use and kept: how a feature loads a heavy module (`require('./x.ts')`,
 * which esbuild turns into a module evaluated at that call) only when it is first needed.
 */
export function lazy<T>(make: () => T): () => T {
  let made = false;
  let value: T;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}
