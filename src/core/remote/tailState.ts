/**
 * Per-file and per-connection state of a RemoteTail session.
 */
import { LineSplitter } from '../sglang/logLines';
import type { ExecStream } from '../ssh/transport';
import { ResumeSkipper } from './tailResume';

// ---------------------------------------------------------------------------------------------------------
// RemoteTail

export interface FileState {
  /** as requested */
  name: string;
  /** as passed to tail (and printed in its headers) */
  arg: string;
  splitter: LineSplitter;
  /** last ≤ ANCHOR_BYTES bytes received */
  anchor: Buffer;
  /** lower bound of the file offset just after the anchor */
  lo: number;
  ino: string | null;
  everOpened: boolean;
  missing: boolean;
}

interface FileStat {
  size: number;
  ino: string;
}

export interface Session {
  id: number;
  stream: ExecStream;
  resume: boolean;
  phase: 'prologue' | 'initial' | 'follow';
  /** initial backlog is read (for the anchor) but not shown */
  mute: boolean;
  /** partial prologue line */
  pro: Buffer | null;
  junk: number;
  /** held-back bytes: "\n" or "\n" + the start of a possible header */
  held: Buffer | null;
  heldAt: number;
  /** index of the file tail is printing: -1 none yet, files.length = the sentinel */
  current: number;
  /** latin1 view of each tail argument's bytes → index (files.length = sentinel) */
  names: Map<string, number>;
  maxHeader: number;
  sentinel: string | null;
  stats: Array<FileStat | null>;
  /** lines (mode n) or bytes (mode c) of backlog tail was asked for */
  count: number;
  mode: 'n' | 'c';
  skippers: Array<ResumeSkipper | null>;
  stderr: LineSplitter;
  stderrTail: string[];
  ready: boolean;
  timedOut: boolean;
}
