/** `gpu-sessions probe NODE`: GPUs, servers, artifacts, and the rental's terms (the provider's, the flags over them). */
import { runOperation } from '../../core/remote/operation';
import { probeOperation } from '../../core/node/probe';
import { probeJson, usageError, withNode } from '../cliNode';
import type { CliCommand } from '../command';
import { nodeExits } from '../exitCodes';
import { formatProbe, formatRental } from '../format';
import { ownTerms } from './common';

export const probe: CliCommand = {
  name: 'probe',
  usage: `  gpu-sessions probe NODE [--json] [--price-per-hour USD] [--deadline ISO-8601]
                                              GPUs, SGLang servers and artifacts of a node (one SSH round trip);
                                              the rental's price and end from its provider where it can tell
                                              (runpodctl, vastai), the flags over them`,
  options: { 'price-per-hour': { type: 'string' }, deadline: { type: 'string' } },
  exitCodes: nodeExits(),
  async run({ args, v, g, io }) {
    if (args.length !== 1) usageError('probe takes exactly one NODE.');
    const own = ownTerms(v);
    return withNode(args[0], g, io, async (t, node, signal) => {
      const p = await runOperation(t, probeOperation(node.name, { roots: node.roots }), signal);
      // the provider's price and end, read on the node with its own key; flags override them
      const { readProviderRental, rentalTerms } = await import('../../core/node/rental');
      const provider = await readProviderRental(t, p.provider, signal);
      const rental = { provider, terms: rentalTerms(own, provider) };
      io.out(g.json ? JSON.stringify(probeJson(p, rental), null, 2) + '\n' : formatProbe(p) + formatRental(rental.terms));
      return 0;
    });
  },
};
