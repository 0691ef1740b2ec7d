// Ids a client mints: runs, messages, client instances. Random, so two tabs never collide.

/** A fresh id such as `run-1f2e3d4c5b6a7988`. */
export function newId(prefix) {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${prefix}-${hex}`;
}
