/**
 * Every command of the extension, registered once. To add one: a file in commands/ exporting a
 * Command (id as contributed in package.json), listed here.
 */
import type * as vscode from 'vscode';
import type { ScriptDocuments } from '../scriptDocuments';
import type { Services } from '../services';
import { captureProfile } from './captureProfile';
import { Command, registerCommands } from './command';
import { copyPath } from './copyPath';
import { endRentalCommand } from './endRental';
import { openDashboard, setRentalDeadline } from './dashboard';
import { startDemoNode, stopDemoNode } from './demo';
import { forgetPassphrases } from './forgetPassphrases';
import { startGuard, stopGuard } from './guard';
import { keepSalvaged } from './keepSalvaged';
import { launchProfile } from './launchProfile';
import { moveJob } from './moveJob';
import { openSettings } from './openSettings';
import { openSshConfig } from './openSshConfig';
import { refresh, refreshNode } from './refresh';
import { releaseNode } from './releaseNode';
import { salvageNode } from './salvageNode';
import { showLog } from './showLog';
import { showProbe } from './showProbe';
import { restartServer, stopServer } from './stopServer';
import { tailAllGpuLogs, tailLog } from './tail';

function allCommands(docs: ScriptDocuments): Command[] {
  return [
    refresh,
    refreshNode,
    showLog,
    openSettings,
    openSshConfig,
    copyPath,
    showProbe,
    forgetPassphrases,
    startDemoNode,
    stopDemoNode,
    tailLog,
    tailAllGpuLogs,
    salvageNode,
    keepSalvaged,
    releaseNode,
    startGuard,
    stopGuard,
    endRentalCommand,
    launchProfile(docs),
    captureProfile,
    moveJob,
    stopServer,
    restartServer,
    openDashboard,
    setRentalDeadline,
  ];
}

export function registerAllCommands(s: Services, docs: ScriptDocuments): vscode.Disposable[] {
  return registerCommands(s, allCommands(docs));
}
