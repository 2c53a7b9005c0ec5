/** One expense line: `2024-05-01 groceries 12.50`. */
export interface Expense {
  readonly date: string;
  readonly category: string;
  readonly amount: number;
}

export function parseLine(line: string): Expense | undefined {
  const [date, category, amount] = line.trim().split(/\s+/);
  if (!date || !category || !amount || Number.isNaN(Number(amount))) return undefined;
  return { date, category, amount: Number(amount) };
}

/** Totals per category, largest first. */
export function totals(expenses: readonly Expense[]): [string, number][] {
  const sums = new Map<string, number>();
  for (const { category, amount } of expenses) sums.set(category, (sums.get(category) ?? 0) + amount);
  return [...sums].sort((a, b) => b[1] - a[1]);
}
