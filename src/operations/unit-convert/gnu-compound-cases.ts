/**
 * Compound unit expressions as engineers write them, each with the same conversion spelled for GNU units
 * (`units -t 'have' 'want'`): GNU's `h` is Planck's constant (hours are `hr`), its `degF` and `K` inside an
 * expression are temperature differences as here, and its `btu` is the IT BTU (BTU_IT). Shared by the
 * cross-check test (gnu-units.test.ts) and the benchmark (bench/unit-convert-compound.bench.ts).
 */
export interface CompoundCase {
  value: number;
  from: string;
  to: string;
  gnuFrom: string;
  gnuTo: string;
}

export const COMPOUND_CASES: readonly CompoundCase[] = [
  { value: 1000, from: "kg/m^3", to: "lb/ft^3", gnuFrom: "kg/m^3", gnuTo: "lb/ft^3" },
  { value: 10, from: "m/s", to: "km/h", gnuFrom: "m/s", gnuTo: "km/hr" },
  { value: 100, from: "km/h", to: "mi/h", gnuFrom: "km/hr", gnuTo: "mile/hr" },
  { value: 1, from: "ft²", to: "m²", gnuFrom: "ft^2", gnuTo: "m^2" },
  { value: 0.6, from: "W/(m·K)", to: "BTU_IT/(h·ft·°F)", gnuFrom: "W/(m K)", gnuTo: "btu/(hr ft degF)" },
  { value: 25, from: "W/(m²·K)", to: "BTU_IT/(h·ft²·°F)", gnuFrom: "W/(m^2 K)", gnuTo: "btu/(hr ft^2 degF)" },
  { value: 4186, from: "J/(kg·K)", to: "BTU_IT/(lb·°F)", gnuFrom: "J/(kg K)", gnuTo: "btu/(lb degF)" },
  { value: 12, from: "L/min", to: "m³/h", gnuFrom: "L/min", gnuTo: "m^3/hr" },
  { value: 50, from: "N·m", to: "ft·lbf", gnuFrom: "N m", gnuTo: "ft lbf" },
  { value: 50, from: "Nm", to: "in·lbf", gnuFrom: "N m", gnuTo: "in lbf" },
  { value: 1, from: "kg·m/s²", to: "N", gnuFrom: "kg m/s^2", gnuTo: "N" },
  { value: 9.80665, from: "m/s^2", to: "ft/s^2", gnuFrom: "m/s^2", gnuTo: "ft/s^2" },
  { value: 1, from: "psi", to: "lbf/ft^2", gnuFrom: "psi", gnuTo: "lbf/ft^2" },
  { value: 1, from: "kWh/m²", to: "MJ/m²", gnuFrom: "kWh/m^2", gnuTo: "MJ/m^2" },
  { value: 1, from: "gal_US/min", to: "L/s", gnuFrom: "gallon/min", gnuTo: "L/s" },
  { value: 1, from: "BTU_IT/lb", to: "kJ/kg", gnuFrom: "btu/lb", gnuTo: "kJ/kg" },
  { value: 1, from: "mPa·s", to: "lbf·s/ft^2", gnuFrom: "mPa s", gnuTo: "lbf s/ft^2" },
  { value: 1, from: "t/h", to: "kg/s", gnuFrom: "tonne/hr", gnuTo: "kg/s" },
  { value: 250, from: "cm³/s", to: "L/min", gnuFrom: "cm^3/s", gnuTo: "L/min" },
  { value: 30, from: "mi/gal_US", to: "km/L", gnuFrom: "mile/gallon", gnuTo: "km/L" },
  { value: 1, from: "µm/s", to: "in/min", gnuFrom: "um/s", gnuTo: "in/min" },
  { value: 3.5, from: "kW/(m³·K)", to: "W/(L·K)", gnuFrom: "kW/(m^3 K)", gnuTo: "W/(L K)" },
  { value: 1, from: "kgf·m", to: "N·m", gnuFrom: "kgf m", gnuTo: "N m" },
  { value: 1, from: "lbf/in^2", to: "kPa", gnuFrom: "lbf/in^2", gnuTo: "kPa" },
];
