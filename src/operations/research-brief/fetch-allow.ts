import net from "node:net";

/**
 * Entries of `RESEARCH_FETCH_ALLOW_HOSTS`: `host:port` (IPv6 as `[::1]:8080`) opens that one port of
 * a host the page fetcher would otherwise refuse (a private address, or a name resolving to one);
 * a bare `host` opens ports 80 and 443 only. Hosts are compared as the URL parser writes them
 * (lower case, punycode, IPv4 in dotted decimal, IPv6 compressed in brackets).
 */
export const BARE_HOST_PORTS = [80, 443] as const;

/** The canonical form of one entry (`host` or `host:port`), or a message saying what is wrong. */
export function parseAllowHost(entry: string): { entry: string } | { error: string } {
  const text = entry.trim().toLowerCase();
  const wrong = (why: string) => ({ error: `"${entry.trim()}": ${why}` });
  if (!text) return wrong("empty entry");
  let host: string;
  let port: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1] as string;
    port = bracketed[2];
    if (!net.isIPv6(host)) return wrong("not an IPv6 address in brackets");
  } else if (net.isIPv6(text)) {
    host = text; // a bare IPv6 address: no port can follow without brackets
  } else {
    const colon = text.lastIndexOf(":");
    host = colon < 0 ? text : text.slice(0, colon);
    port = colon < 0 ? undefined : text.slice(colon + 1);
  }
  if (port !== undefined && !/^\d{1,5}$/.test(port)) return wrong("the port must be a number");
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535))
    return wrong("the port must be 1-65535");
  let hostname: string;
  try {
    hostname = new URL(`http://${net.isIPv6(host) ? `[${host}]` : host}/`).hostname;
  } catch {
    return wrong("not a host name or IP address (write host or host:port, no scheme or path)");
  }
  if (!hostname || /[/?#@\s]/.test(host)) {
    return wrong("not a host name or IP address (write host or host:port, no scheme or path)");
  }
  return { entry: port === undefined ? hostname : `${hostname}:${Number(port)}` };
}

/** Canonical entries; throws on the first invalid one. */
export function parseAllowHosts(entries: readonly string[]): string[] {
  return entries.map((entry) => {
    const parsed = parseAllowHost(entry);
    if ("error" in parsed) throw new Error(`invalid fetch allow-list entry ${parsed.error}`);
    return parsed.entry;
  });
}

/** Whether a URL's host and port (the scheme's default when none is written) are allowed. */
export function isAllowedUrl(url: URL, allowHosts: readonly string[]): boolean {
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  const host = url.hostname.toLowerCase();
  return (
    allowHosts.includes(`${host}:${port}`) ||
    ((BARE_HOST_PORTS as readonly number[]).includes(port) && allowHosts.includes(host))
  );
}
