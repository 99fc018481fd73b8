/**
 * Whether a process is alive, as a POSIX sh condition: its /proc entry exists AND it is not a zombie. A killed
 * server whose parent never reaps it (PID 1 in many containers does not) keeps a /proc entry in state Z; it no
 * longer runs, holds no GPU and no port, and `ps`/the probe no longer list it, so every reader agrees it is gone.
 * Shell builtins only (a bare node may lack sed and cut): the state is the field after the last `) ` of stat.
 */
export function shPidLive(pid: number): string {
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error(`not a pid: ${pid}`);
  return `{ z=; read -r z 2>/dev/null < /proc/${pid}/stat; z=\${z##*) }; z=\${z%% *}; [ -n "$z" ] && [ "$z" != Z ]; }`;
}
