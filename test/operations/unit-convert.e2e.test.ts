import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = 10_000n; // USD 0.01 in USDC atomic units

describe("unit-convert on the local chain", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(3));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [unitConvert] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("a paid batch charges exactly USD 0.01 once and answers exact results with a receipt", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost({
        conversions: [
          { value: 100, from: "psi", to: "kPa" },
          { value: 10, from: "°F", to: "°C" },
          { value: 1, from: "kWh", to: "BTU_IT" },
        ],
      }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      results: [
        {
          value: 100,
          from: "psi",
          to: "kPa",
          result: 689.475729316836,
          resultExact: "8896443230521/12903200000",
          domain: "pressure",
          dimension: "L^-1·M·T^-2",
        },
        {
          value: 10,
          from: "degF",
          to: "degC",
          result: -12.2222222222222,
          resultExact: "-12.(2)",
          domain: "temperature",
          dimension: "Θ",
        },
        {
          value: 1,
          from: "kWh",
          to: "BTU_IT",
          result: 3412.14163312794,
          resultExact: "180000000000000/52752792631",
          domain: "energy",
          dimension: "L^2·M·T^-2",
        },
      ],
      converted: 3,
      failed: 0,
    });
    const receipt = paymentReceipt(response);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(receipt?.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);
  });

  it("a batch with one bad item answers the others and that item's error at its pointer, charged once", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost({
        conversions: [
          { value: 1, from: "m", to: "ft" },
          { value: 1000, from: "kg/m^3", to: "lb/ft^3" },
          { value: 30, from: "psig", to: "kPa" },
          { value: 1, from: "m", to: "kg" },
        ],
      }),
    );
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ converted: 2, failed: 2 });
    expect(body.results[1]).toMatchObject({
      from: "kg/m^3",
      to: "lb/ft^3",
      result: 62.4279605761446,
      domain: null,
    });
    expect(body.results[2]).toEqual({
      value: 30,
      from: "psig",
      to: "kPa",
      errors: [{ pointer: "/conversions/2/from", message: expect.stringContaining("gauge pressure") }],
    });
    expect(body.results[3].errors).toEqual([
      {
        pointer: "/conversions/3/to",
        message: expect.stringContaining("m measures length (dimension L), kg measures mass (dimension M)"),
      },
    ]);
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);
  });

  // The money rules of a 400 (before the 402, a payment sent with it not taken): test/contract/paid-operations.
  it("a batch whose every item fails, and an invalid single unit, are 400s naming each item's pointer", async () => {
    const body = {
      conversions: [
        { value: 1, from: "barg", to: "kPa" },
        { value: 1, from: "m", to: "kg" },
      ],
    };
    const response = await fetch(`${service.url}/v1/unit-convert`, jsonPost(body));
    expect(response.status).toBe(400);
    expect((await response.json()).errors).toEqual([
      { pointer: "/conversions/0/from", message: expect.stringContaining("gauge pressure") },
      {
        pointer: "/conversions/1/to",
        message: expect.stringContaining("m measures length (dimension L), kg measures mass (dimension M)"),
      },
    ]);
    const ambiguous = await fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost({ value: 1, from: "ton", to: "kg" }),
    );
    expect(ambiguous.status).toBe(400);
    expect((await ambiguous.json()).errors).toEqual([
      { pointer: "/from", message: expect.stringContaining('"ton" is ambiguous; name one of: t (tonne') },
    ]);
  });

  it("converts what engineers write: N·m and Nm to ft·lbf, W/(m·K), L/min, and K to delta_degC", async () => {
    const response = await payer.fetch(
      `${service.url}/v1/unit-convert`,
      jsonPost({
        conversions: [
          { value: 50, from: "Nm", to: "ft·lbf" },
          { value: 0.6, from: "W/(m·K)", to: "BTU_IT/(h·ft·°F)" },
          { value: 12, from: "L/min", to: "m³/h" },
          { value: 5, from: "K", to: "delta_degC" },
        ],
      }),
    );
    expect(response.status).toBe(200);
    const { results } = await response.json();
    expect(
      results.map((r: { from: string; to: string; resultExact: string }) => [r.from, r.to, r.resultExact]),
    ).toEqual([
      ["N·m", "ft_lbf", "125000000000000000/3389544870828501"],
      ["W/(m·K)", "BTU_IT/(h·ft·delta_degF)", "18288000000/52752792631"],
      ["L/min", "m^3/h", "0.72"],
      ["K", "delta_degC", "5"],
    ]);
  });

  it("GET /v1/units is free: 200 without payment, the 92 units with their exact factors", async () => {
    const response = await fetch(`${service.url}/v1/units`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
    const list = await response.json();
    expect(list.count).toBe(92);
    expect(list.units).toHaveLength(92);
    expect(list.units.find((u: any) => u.id === "BTU_IT")).toMatchObject({
      domain: "energy",
      symbol: "BTU_IT",
      factor: "52752792631/50000000",
      factorExact: "1055.05585262",
    });
    expect(list.ambiguous.map((a: any) => a.choices)).toContainEqual(["gal_US", "gal_imp"]);

    const post405 = await fetch(`${service.url}/v1/units`, { method: "POST" });
    expect(post405.status).toBe(405);
    const openapi = await (await fetch(`${service.url}/openapi.json`)).json();
    expect(openapi.paths["/v1/units"].get).toMatchObject({ operationId: "list-units", security: [] });
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    expect(catalog.free).toContainEqual(expect.objectContaining({ method: "GET", path: "/v1/units" }));
  });
});
