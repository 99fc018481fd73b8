/**
 * The rental's price and end as the provider says them, where the node can tell: RunPod
 * `runpodctl pod get ID` `costPerHr` (no end: a pod runs until stopped), Vast `vastai show instance ID --raw`
 * `dph_total` and `end_date` — the provider's status operation (core/provider/actions.ts), run on the node with its
 * own scoped key, never the user's. It is a network call of the provider's CLI: read at most every READ_EVERY_MS per
 * node, not on every probe. Then which terms count: the user's own (a flag, a per-node setting) over the provider's,
 * the provider's over a default price setting; each figure keeps its source, which spend, the deadline row and the
 * CLI show. Nothing here imports vscode.
 */
import { runOperation } from '../remote/operation';
import type { Transport } from '../ssh/transport';
import { statusOperation } from '../provider/actions';
import type { ProviderInfo, ProviderName } from '../provider/detect';
import type { InstanceState } from '../provider/status';

/** What the provider said about the rental, read on the node. */
export interface ProviderRental {
  provider: ProviderName;
  instanceId: string;
  /** USD per hour (RunPod `costPerHr`, Vast `dph_total`); null when the answer had none. */
  pricePerHour: number | null;
  /** End of the rental (Vast `end_date`), ISO; null where the provider has none (RunPod). */
  endsAt: string | null;
  state: InstanceState;
  /** The provider's CLI that said it ("runpodctl", "vastai"): the figures' source. */
  source: string;
  readAt: string;
}

/** How often a node's provider is asked again (its price changes rarely; each read is an API call). */
const READ_EVERY_MS = 10 * 60_000;

/** True when the node can read its provider's status: RunPod or Vast with its CLI and key (an action to take). */
export function canReadRental(p: ProviderInfo | undefined | null): p is ProviderInfo & { instanceId: string } {
  return (
    !!p &&
    (p.name === 'runpod' || p.name === 'vast') &&
    p.instanceId !== null &&
    (p.actions.includes('stop') || p.actions.includes('terminate'))
  );
}

/** Reads the provider's price and end on the node; null when it cannot tell (no provider CLI, an error, no figure). */
export async function readProviderRental(
  t: Transport,
  p: ProviderInfo | undefined | null,
  signal?: AbortSignal,
  now: () => number = Date.now,
): Promise<ProviderRental | null> {
  if (!canReadRental(p)) return null;
  try {
    const st = await runOperation(t, statusOperation(p), signal);
    if (st.pricePerHour === null && st.endsAt === null) return null;
    return {
      provider: p.name,
      instanceId: p.instanceId,
      pricePerHour: st.pricePerHour,
      endsAt: st.endsAt,
      state: st.state,
      source: p.name === 'runpod' ? 'runpodctl' : 'vastai',
      readAt: new Date(now()).toISOString(),
    };
  } catch {
    return null;
  }
}

/** The price and deadline that count, each with where it came from (null: none known). */
export interface RentalTerms {
  pricePerHour: number | null;
  priceSource: string | null;
  deadline: Date | null;
  deadlineSource: string | null;
}

/** The user's own terms: `price`/`deadline` override the provider's; `defaultPrice` only stands in for none. */
export interface OwnTerms {
  price?: { value: number; source: string } | null;
  deadline?: { at: Date; source: string } | null;
  defaultPrice?: { value: number; source: string } | null;
}

/** Which terms count: the user's own, else the provider's, else a default price. */
export function rentalTerms(own: OwnTerms, provider: ProviderRental | null): RentalTerms {
  const fromProvider = provider?.pricePerHour ?? null;
  const price = own.price ?? (fromProvider !== null ? { value: fromProvider, source: provider!.source } : null) ?? own.defaultPrice ?? null;
  const end = provider?.endsAt ? new Date(provider.endsAt) : null;
  const deadline = own.deadline ?? (end && !Number.isNaN(end.getTime()) ? { at: end, source: provider!.source } : null);
  return {
    pricePerHour: price?.value ?? null,
    priceSource: price?.source ?? null,
    deadline: deadline?.at ?? null,
    deadlineSource: deadline?.source ?? null,
  };
}

/** "$41.93/h from runpodctl"; null without a price. */
export function priceWithSource(t: { pricePerHour: number | null; priceSource: string | null }): string | null {
  if (t.pricePerHour === null) return null;
  return `$${t.pricePerHour}/h${t.priceSource ? ` from ${t.priceSource}` : ''}`;
}

/** The JSON of the terms (`probe --json` `rental`). */
export function rentalTermsJson(t: RentalTerms): Record<string, unknown> {
  return {
    pricePerHour: t.pricePerHour,
    priceSource: t.priceSource,
    deadline: t.deadline ? t.deadline.toISOString() : null,
    deadlineSource: t.deadlineSource,
  };
}

/**
 * The provider's rental of each node, read at most every READ_EVERY_MS (the watch, the extension): `get` answers
 * the last read; `refresh` reads again when it is due, one read per node at a time.
 */
export class ProviderRentals {
  private readonly byNode = new Map<string, { rental: ProviderRental | null; at: number }>();
  private readonly inFlight = new Map<string, Promise<ProviderRental | null>>();

  constructor(
    private readonly everyMs = READ_EVERY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get(node: string): ProviderRental | null {
    return this.byNode.get(node)?.rental ?? null;
  }

  /** True when a read of this node is due (never read, or older than everyMs). */
  due(node: string): boolean {
    const e = this.byNode.get(node);
    return !e || this.now() - e.at >= this.everyMs;
  }

  /**
   * Reads the node's provider when due (a node that cannot tell is not asked, and forgets); answers the rental known
   * after. A failed read keeps the same instance's last answer until the next read is due.
   */
  async refresh(node: string, t: Transport, p: ProviderInfo | undefined | null, signal?: AbortSignal): Promise<ProviderRental | null> {
    if (!canReadRental(p)) {
      this.byNode.delete(node);
      return null;
    }
    if (!this.due(node)) return this.get(node);
    const running = this.inFlight.get(node);
    if (running) return running;
    const read = readProviderRental(t, p, signal, this.now).then((told) => {
      // a read that failed (a timeout, the API down) keeps what the same instance said before
      const prev = this.get(node);
      const rental = told ?? (prev?.instanceId === p.instanceId ? prev : null);
      this.byNode.set(node, { rental, at: this.now() });
      this.inFlight.delete(node);
      return rental;
    });
    this.inFlight.set(node, read);
    return read;
  }

  forget(node: string): void {
    this.byNode.delete(node);
  }
}
