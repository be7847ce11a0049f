import inspector from "node:inspector";

/**
 * `--profiler-address`: the Node inspector (CPU and heap profiles from Chrome DevTools or
 * `node inspect`) on host:port. Empty or "0" leaves it off. Returns the inspector's URL.
 */
export function openProfiler(address: string): string | undefined {
  if (address === "" || address === "0") return undefined;
  const colon = address.lastIndexOf(":");
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1") || "127.0.0.1";
  inspector.open(Number(address.slice(colon + 1)), host, false);
  return inspector.url();
}

export function closeProfiler(): void {
  inspector.close();
}
