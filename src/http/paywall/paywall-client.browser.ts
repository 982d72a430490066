/// <reference lib="dom" />
/**
 * The script of the paywall page (./paywall-page.ts), bundled for the browser (./paywall-assets.ts) and
 * served by the service itself. It pays the way the official x402 clients do: `x402Client` with the
 * `@x402/evm` exact scheme signs an EIP-3009 authorization, here through the browser's wallet
 * (EIP-1193 `window.ethereum`, `eth_signTypedData_v4`), and the GET is retried with the PAYMENT-SIGNATURE
 * header. The answer is saved (a download) or shown (JSON).
 */
import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { ClientEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { PAYMENT_RESPONSE_HEADER, PAYMENT_SIGNATURE_HEADER } from "../../payments/headers.ts";
import type { PaywallData } from "./paywall-page.ts";

/** EIP-1193: what a browser wallet injects as `window.ethereum`. */
interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

type Hex = `0x${string}`;

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function setStatus(text: string, kind: "info" | "error" | "done" = "info"): void {
  const status = element("status");
  status.textContent = text;
  status.dataset.kind = kind;
}

/** The EIP712Domain fields a domain has, in the standard order (eth_signTypedData_v4 wants them listed). */
function domainType(domain: Record<string, unknown>) {
  const fields = [
    ["name", "string"],
    ["version", "string"],
    ["chainId", "uint256"],
    ["verifyingContract", "address"],
    ["salt", "bytes32"],
  ] as const;
  return fields.filter(([name]) => domain[name] !== undefined).map(([name, type]) => ({ name, type }));
}

/** The wallet as the exact scheme's signer: it signs the typed data the scheme builds, nothing else. */
function walletSigner(provider: Eip1193Provider, address: Hex): ClientEvmSigner {
  return {
    address,
    async signTypedData({ domain, types, primaryType, message }) {
      const typedData = {
        domain,
        types: { EIP712Domain: domainType(domain), ...types },
        primaryType,
        message,
      };
      // JSON has no bigint: uint256 values go as decimal strings, as wallets take them.
      const json = JSON.stringify(typedData, (_key, value) =>
        typeof value === "bigint" ? value.toString() : value,
      );
      return (await provider.request({ method: "eth_signTypedData_v4", params: [address, json] })) as Hex;
    },
  };
}

/** Puts the wallet on the chain the terms name (CAIP-2 `eip155:<id>`), or says why it could not. */
async function useChain(provider: Eip1193Provider, network: string): Promise<void> {
  const wanted = `0x${BigInt(network.split(":")[1] ?? "0").toString(16)}`;
  const current = String(await provider.request({ method: "eth_chainId" }));
  if (BigInt(current) === BigInt(wanted)) return;
  await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: wanted }] });
}

/** The file name a download's Content-Disposition gives, or a safe default. */
function fileNameOf(response: Response): string {
  const disposition = response.headers.get("content-disposition") ?? "";
  const name = /filename="([^"]+)"/.exec(disposition)?.[1];
  return name?.replace(/[/\\]/g, "_") || "download";
}

/** What the paid answer was: a file is saved, JSON shown; the settlement's transaction is named. */
async function deliver(response: Response): Promise<void> {
  const result = element("result");
  result.replaceChildren();
  result.hidden = false;
  const receiptHeader = response.headers.get(PAYMENT_RESPONSE_HEADER);
  const receipt = receiptHeader ? decodePaymentResponseHeader(receiptHeader) : undefined;
  const contentType = response.headers.get("content-type") ?? "";
  if (contentType.includes("json")) {
    const pre = document.createElement("pre");
    pre.id = "result-json";
    pre.textContent = JSON.stringify(await response.json(), null, 2);
    result.append(pre);
  } else {
    const link = document.createElement("a");
    link.id = "result-file";
    link.href = URL.createObjectURL(await response.blob());
    link.download = fileNameOf(response);
    link.textContent = `Save ${link.download} again`;
    result.append(link);
    link.click();
  }
  const transaction = receipt?.transaction ? ` (transaction ${receipt.transaction})` : "";
  setStatus(`Paid${transaction}.`, "done");
}

/** The reason a refused retry gives (problem+json `detail`), or its status. */
async function refusal(response: Response): Promise<string> {
  const problem = (await response.json().catch(() => undefined)) as { detail?: string } | undefined;
  return `Not paid: ${problem?.detail ?? `the service answered ${response.status}`}`;
}

async function main(): Promise<void> {
  const data = JSON.parse(element("x402-terms").textContent ?? "{}") as PaywallData;
  const requirement = data.paymentRequired.accepts[0];
  const provider = (window as unknown as { ethereum?: Eip1193Provider }).ethereum;
  const connect = element<HTMLButtonElement>("connect");
  const pay = element<HTMLButtonElement>("pay");
  if (!requirement) return setStatus("This resource names no way to pay.", "error");
  if (!provider) {
    return setStatus("No browser wallet found: install one (an EIP-1193 wallet) and reload.", "error");
  }
  let address: Hex | undefined;
  connect.disabled = false;
  setStatus("Connect your wallet to pay.");
  connect.addEventListener("click", async () => {
    try {
      const accounts = (await provider.request({ method: "eth_requestAccounts" })) as Hex[];
      address = accounts[0];
      if (!address) return setStatus("The wallet shared no account.", "error");
      await useChain(provider, requirement.network);
      connect.textContent = `${address.slice(0, 6)}…${address.slice(-4)}`;
      pay.disabled = false;
      setStatus(`Connected: ${address}.`);
    } catch (error) {
      setStatus(`Could not connect: ${(error as Error).message}`, "error");
    }
  });
  pay.addEventListener("click", async () => {
    if (!address) return;
    pay.disabled = true;
    try {
      await useChain(provider, requirement.network);
      setStatus("Sign the payment in your wallet…");
      // The person agreed to the price the page shows: the client signs for no more than that.
      const client = new x402Client()
        .register(
          requirement.network as `${string}:${string}`,
          new ExactEvmScheme(walletSigner(provider, address)),
        )
        .setSpendControls({ maxAmountPerPayment: `$${data.priceUsd}` });
      const payment = await client.createPaymentPayload(data.paymentRequired);
      setStatus("Paying…");
      const response = await fetch(window.location.href, {
        headers: { [PAYMENT_SIGNATURE_HEADER]: encodePaymentSignatureHeader(payment) },
      });
      if (response.ok) await deliver(response);
      else {
        setStatus(await refusal(response), "error");
        pay.disabled = false;
      }
    } catch (error) {
      setStatus(`Not paid: ${(error as Error).message}`, "error");
      pay.disabled = false;
    }
  });
}

void main();
