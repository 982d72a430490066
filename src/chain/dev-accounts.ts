import { type HDAccount, mnemonicToAccount } from "viem/accounts";

/** anvil's published development mnemonic: every key derived from it is public knowledge. */
export const ANVIL_DEV_MNEMONIC = "test test test test test test test test test test test junk";

export interface DevAccounts {
  /** #0 pays gas and settles payments. */
  settler: HDAccount;
  /** #1 receives payments. */
  payTo: HDAccount;
  /** #2–#9 hold test USDC for clients (the demo uses #2). */
  clients: HDAccount[];
}

export const devAccount = (index: number): HDAccount =>
  mnemonicToAccount(ANVIL_DEV_MNEMONIC, { addressIndex: index });

/** The private key of a dev account, for clients that want a raw key (demo, tests). */
export const devPrivateKey = (index: number): `0x${string}` => {
  const key = devAccount(index).getHdKey().privateKey;
  if (!key) throw new Error(`dev account #${index} has no private key`);
  return `0x${Buffer.from(key).toString("hex")}`;
};

export function devAccounts(): DevAccounts {
  return {
    settler: devAccount(0),
    payTo: devAccount(1),
    clients: Array.from({ length: 8 }, (_, i) => devAccount(i + 2)),
  };
}
