import net from "node:net";

/**
 * Whether an IP address is a public unicast address a page fetch may connect to, or one of the
 * special-purpose addresses of the IANA IPv4 and IPv6 registries (loopback, private, link-local,
 * cloud metadata, documentation, multicast, reserved, protocol assignments) that it must not.
 *
 * Pure: addresses are parsed to integers here, with no `net.BlockList` (which matches every IPv4
 * address against an IPv4-mapped `::ffff:0:0/96` rule). IPv6 forms that carry an IPv4 address are
 * classified by that address: IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and 6to4
 * `2002:AABB:CCDD::` pass only when the IPv4 address inside is public; the deprecated
 * IPv4-compatible `::a.b.c.d` and Teredo `2001:0::/32` are refused whatever they carry (the reason
 * names the IPv4 address inside). Any IPv6 address outside global unicast `2000::/3` that no rule
 * names is refused too (the rest of that space is reserved by the IETF).
 */
export type AddressVerdict =
  | { public: true; address: string }
  | { public: false; address: string; range: string; reason: string };

interface Range {
  prefix: bigint;
  bits: number;
  cidr: string;
  name: string;
}

const ipv4Range = (cidr: string, name: string): Range => {
  const [prefix, bits] = cidr.split("/") as [string, string];
  return { prefix: BigInt(ipv4ToNumber(prefix) as number), bits: Number(bits), cidr, name };
};
const ipv6Range = (cidr: string, name: string): Range => {
  const [prefix, bits] = cidr.split("/") as [string, string];
  return { prefix: ipv6ToBigInt(prefix) as bigint, bits: Number(bits), cidr, name };
};

/** The IANA IPv4 Special-Purpose Address Registry, multicast and the limited broadcast address. */
const IPV4_SPECIAL: Range[] = [
  ipv4Range("0.0.0.0/8", '"this network" (RFC 791)'),
  ipv4Range("10.0.0.0/8", "private network (RFC 1918)"),
  ipv4Range("100.64.0.0/10", "carrier-grade NAT shared space (RFC 6598)"),
  ipv4Range("127.0.0.0/8", "loopback (RFC 1122)"),
  ipv4Range("169.254.0.0/16", "link-local, where cloud metadata answers (RFC 3927)"),
  ipv4Range("172.16.0.0/12", "private network (RFC 1918)"),
  ipv4Range("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
  ipv4Range("192.0.2.0/24", "documentation TEST-NET-1 (RFC 5737)"),
  ipv4Range("192.31.196.0/24", "AS112-v4 (RFC 7535)"),
  ipv4Range("192.52.193.0/24", "AMT (RFC 7450)"),
  ipv4Range("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
  ipv4Range("192.168.0.0/16", "private network (RFC 1918)"),
  ipv4Range("192.175.48.0/24", "AS112 direct delegation (RFC 7534)"),
  ipv4Range("198.18.0.0/15", "benchmarking (RFC 2544)"),
  ipv4Range("198.51.100.0/24", "documentation TEST-NET-2 (RFC 5737)"),
  ipv4Range("203.0.113.0/24", "documentation TEST-NET-3 (RFC 5737)"),
  ipv4Range("224.0.0.0/4", "multicast (RFC 5771)"),
  ipv4Range("255.255.255.255/32", "limited broadcast (RFC 919)"),
  ipv4Range("240.0.0.0/4", "reserved (RFC 1112)"),
];

/** IPv6 forms that embed an IPv4 address, and where it sits. */
interface EmbeddingRange extends Range {
  embedded(value: bigint): number;
  /** Refused whatever the IPv4 address inside is (the reason still names it). */
  alwaysRefused: boolean;
}
const low32 = (value: bigint) => Number(value & 0xffffffffn);
const EMBEDDING: EmbeddingRange[] = [
  { ...ipv6Range("::ffff:0:0/96", "IPv4-mapped (RFC 4291)"), embedded: low32, alwaysRefused: false },
  {
    ...ipv6Range("64:ff9b::/96", "NAT64 well-known prefix (RFC 6052)"),
    embedded: low32,
    alwaysRefused: false,
  },
  {
    ...ipv6Range("2002::/16", "6to4 (RFC 3056)"),
    embedded: (value) => Number((value >> 80n) & 0xffffffffn),
    alwaysRefused: false,
  },
  {
    ...ipv6Range("2001::/32", "Teredo (RFC 4380)"),
    // The client's address, every bit inverted, in the last 32 bits.
    embedded: (value) => (low32(value) ^ 0xffffffff) >>> 0,
    alwaysRefused: true,
  },
  // After ::/128 and ::1/128 below have been ruled out.
  { ...ipv6Range("::/96", "deprecated IPv4-compatible (RFC 4291)"), embedded: low32, alwaysRefused: true },
];

/** The IANA IPv6 Special-Purpose Address Registry, site-local, and multicast. */
const IPV6_SPECIAL: Range[] = [
  ipv6Range("::/128", "unspecified address (RFC 4291)"),
  ipv6Range("::1/128", "loopback (RFC 4291)"),
  ipv6Range("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
  ipv6Range("100::/64", "discard-only (RFC 6666)"),
  ipv6Range("100:0:0:1::/64", "dummy prefix (RFC 9780)"),
  ipv6Range("2001::/23", "IETF protocol assignments (RFC 2928)"),
  ipv6Range("2001:db8::/32", "documentation (RFC 3849)"),
  ipv6Range("2620:4f:8000::/48", "AS112 direct delegation (RFC 7534)"),
  ipv6Range("3fff::/20", "documentation (RFC 9637)"),
  ipv6Range("5f00::/16", "segment routing SRv6 SIDs (RFC 9602)"),
  ipv6Range("fc00::/7", "unique local, e.g. cloud metadata at fd00:ec2::254 (RFC 4193)"),
  ipv6Range("fe80::/10", "link-local (RFC 4291)"),
  ipv6Range("fec0::/10", "deprecated site-local (RFC 3879)"),
  ipv6Range("ff00::/8", "multicast (RFC 4291)"),
];
const GLOBAL_UNICAST = ipv6Range("2000::/3", "global unicast");

const within = (value: bigint, range: Range, width: number) =>
  value >> BigInt(width - range.bits) === range.prefix >> BigInt(width - range.bits);

/** `a.b.c.d` (four decimal parts, as `net.isIPv4` accepts) as an unsigned 32-bit number. */
export function ipv4ToNumber(address: string): number | undefined {
  if (!net.isIPv4(address)) return undefined;
  return address.split(".").reduce((value, part) => value * 256 + Number(part), 0);
}

export const numberToIpv4 = (value: number) =>
  [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join(".");

/** An IPv6 address (with `::`, a trailing dotted IPv4 part, a `%zone`) as a 128-bit integer. */
export function ipv6ToBigInt(address: string): bigint | undefined {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!net.isIPv6(bare)) return undefined;
  let text = bare;
  const dotted = /(?:^|:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = ipv4ToNumber(dotted[1] as string);
    if (v4 === undefined) return undefined;
    text = `${text.slice(0, text.length - (dotted[1] as string).length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  let value = 0n;
  for (const group of all) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined;
    value = (value << 16n) | BigInt(Number.parseInt(group, 16));
  }
  return value;
}

function classifyIpv4(value: number): { range: Range } | undefined {
  const big = BigInt(value);
  const range = IPV4_SPECIAL.find((candidate) => within(big, candidate, 32));
  return range ? { range } : undefined;
}

/**
 * Public or refused, with the range and why. Anything that is not an IPv4 or IPv6 address is
 * refused. Accepts an IPv6 address with or without brackets and a zone.
 */
export function classifyAddress(address: string): AddressVerdict {
  const refused = (range: string, reason: string): AddressVerdict => ({
    public: false,
    address,
    range,
    reason,
  });
  const v4 = ipv4ToNumber(address);
  if (v4 !== undefined) {
    const special = classifyIpv4(v4);
    return special
      ? refused(special.range.cidr, `${address} is in ${special.range.cidr}, ${special.range.name}`)
      : { public: true, address };
  }
  const v6 = ipv6ToBigInt(address);
  if (v6 === undefined) return refused("", `${address} is not an IP address`);
  const exact = IPV6_SPECIAL.slice(0, 2).find((range) => within(v6, range, 128));
  if (exact) return refused(exact.cidr, `${address} is ${exact.cidr}, ${exact.name}`);
  const embedding = EMBEDDING.find((range) => within(v6, range, 128));
  if (embedding) {
    const inner = embedding.embedded(v6);
    const innerText = numberToIpv4(inner);
    const special = classifyIpv4(inner);
    if (special) {
      return refused(
        embedding.cidr,
        `${address} is in ${embedding.cidr}, ${embedding.name}, carrying ${innerText}, which is in ${special.range.cidr}, ${special.range.name}`,
      );
    }
    if (embedding.alwaysRefused) {
      return refused(
        embedding.cidr,
        `${address} is in ${embedding.cidr}, ${embedding.name} (carrying ${innerText}); such addresses are not fetched`,
      );
    }
    return { public: true, address };
  }
  const special = IPV6_SPECIAL.find((range) => within(v6, range, 128));
  if (special) return refused(special.cidr, `${address} is in ${special.cidr}, ${special.name}`);
  if (!within(v6, GLOBAL_UNICAST, 128)) {
    return refused("", `${address} is outside global unicast 2000::/3 (reserved by the IETF)`);
  }
  return { public: true, address };
}
