/**
 * The data guard in VS Code: every `gpuSessions.data.intervalSeconds` (0: off) each connected node's generation
 * output files (found on the node, as `gpu-sessions data` finds them) are judged on the node by the core's
 * DataWatch; the node gets a Data row ("902,087 rows · 0.4 % empty · 3 % cut at length"), a file that turns
 * degenerate a warning with Open Sample / Open File, and the shares go to the node's history (the dashboard).
 */
import { DataWatch, DataSampleFile } from '../core/data/watch';
export { dataRowText } from '../core/data/summary';
import { DEFAULT_THRESHOLDS, DataThresholds, parseThresholds } from '../core/data/verdict';
import type { DataFileReport } from '../core/data/verdict';
import { sampleMarkdown } from '../core/data/summary';
import type { GuardTransition } from '../core/node/guard';
import type { Fleet } from '../core/node/fleet';
import type { Transport } from '../core/ssh/transport';
import { cfg } from './config';
import { Disposables, toDisposable } from './disposable';

interface DataGuardsDeps {
  fleet: Fleet;
  transportFor(node: string): Transport | undefined;
  /** A transition (the alerts show it). */
  onTransition(t: GuardTransition): void;
  /** The node's Data row changed. */
  refresh(node: string): void;
}

function thresholds(): DataThresholds {
  try {
    return parseThresholds(cfg<string>('data.thresholds', ''));
  } catch {
    return DEFAULT_THRESHOLDS;
  }
}

export class DataGuards extends Disposables {
  private readonly watches = new Map<string, DataWatch>();
  private readonly lastRun = new Map<string, number>();

  constructor(private readonly d: DataGuardsDeps) {
    super();
    const timer = setInterval(() => this.tick(), 5000);
    this.register(toDisposable(() => clearInterval(timer)));
  }

  /** The latest files of a node (undefined before its first judgement). */
  filesOf(node: string): DataSampleFile[] | undefined {
    const w = this.watches.get(node);
    const s = w?.sample();
    return s && s.length ? s : undefined;
  }

  reportOf(node: string, path: string): DataFileReport | undefined {
    return this.watches
      .get(node)
      ?.files()
      .find((f) => f.path === path);
  }

  private tick(): void {
    const secs = cfg<number>('data.intervalSeconds', 60);
    if (!(secs > 0)) return;
    const now = Date.now();
    for (const spec of this.d.fleet.nodes()) {
      const st = this.d.fleet.status(spec.name);
      if (st.state !== 'ok' || !st.probe) continue;
      if (now - (this.lastRun.get(spec.name) ?? 0) < secs * 1000) continue;
      const t = this.d.transportFor(spec.name);
      if (!t) continue;
      this.lastRun.set(spec.name, now);
      let w = this.watches.get(spec.name);
      if (!w) {
        // Every poll looks for new output files too (a new batch file is judged at its first interval, as the CLI
        // judges it at once; it once waited for the 12th poll, ~10 min).
        w = new DataWatch(spec.name, { roots: spec.roots, thresholds: thresholds(), rediscoverEvery: 1 });
        w.onTransition((tr) => this.d.onTransition(tr));
        this.watches.set(spec.name, w);
      }
      void w.poll(t).then(() => this.d.refresh(spec.name));
    }
  }

  /** A markdown page of a file's sampled rows behind its verdict (Open Sample). */
  sampleText(node: string, path: string): string {
    return sampleMarkdown(node, path, this.reportOf(node, path));
  }
}
