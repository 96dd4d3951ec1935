// Whether a process still runs, for the owners that the lock, the catalog file and the
// sandbox's leftover containers name by pid.

/** Whether a process with that pid is alive on this host (EPERM: alive, another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
