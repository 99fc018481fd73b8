/** The CLI's commands, in the order `gpu-sessions --help` lists them. */
import type { CliCommand } from '../command';
import { capture } from './capture';
import { data } from './data';
import { demo } from './demo';
import { endRental } from './endRental';
import { guard } from './guard';
import { history } from './history';
import { launch } from './launch';
import { mcp } from './mcp';
import { nodes } from './nodes';
import { parseLog } from './parseLog';
import { probe } from './probe';
import { release } from './release';
import { resolve } from './resolve';
import { restart } from './restart';
import { restore } from './restore';
import { salvage } from './salvage';
import { stop } from './stop';
import { tail } from './tail';
import { watch } from './watch';

export const COMMANDS: readonly CliCommand[] = [
  nodes,
  resolve,
  probe,
  salvage,
  parseLog,
  tail,
  launch,
  restore,
  capture,
  stop,
  restart,
  watch,
  release,
  endRental,
  history,
  data,
  guard,
  mcp,
  demo,
];

export function findCommand(name: string): CliCommand | undefined {
  return COMMANDS.find((c) => c.name === name);
}
