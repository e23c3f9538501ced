import type { LimitStore } from '../../src/runtime/limits/store.js';

/**
 * Takes `count` slots of `dependency` (declared `maxInFlight: count`) as another process would, leased for
 * 10 minutes: the cap stays full until `giveBack()`.
 */
export async function takeSlotsElsewhere(
  store: LimitStore,
  dependency: string,
  count: number,
): Promise<{ giveBack(): Promise<void> }> {
  const leases = Array.from({ length: count }, (_, i) => `elsewhere:1:${i + 1}`);
  const exchange = async (take: string[], give: string[]) => {
    await store.exchangeLimits(dependency, {
      holder: 'elsewhere:1',
      declared: { maxInFlight: count },
      leaseMs: 600_000,
      give: give.map((lease) => ({ lease, ok: true })),
      renew: [],
      take: take.map((lease) => ({ lease, cost: 1 })),
      probes: 1,
      ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
    });
  };
  await exchange(leases, []);
  return { giveBack: () => exchange([], leases) };
}
