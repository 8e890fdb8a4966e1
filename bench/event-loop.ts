/**
 * How long the event loop was blocked during some work, measured two ways at once: perf_hooks'
 * `monitorEventLoopDelay` (its max) and a 1 ms `setInterval` probe (the longest gap between its
 * ticks beyond the 1 ms it asked for, the stretch up to `stop()` included).
 *
 * On a loaded machine both also count the time the process waited for a core. So the probe notes as
 * well the CPU time the process spent between two of its ticks, and the most it spent in any one gap
 * is the load-independent figure: an upper bound on the worker's longest stretch of work without the
 * event loop turning (an upper bound, as the process's other threads, such as the GC's, count too).
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

export interface LoopBlock {
  /** `monitorEventLoopDelay({ resolution: 1 })`'s max, in ms. */
  histogramMs: number;
  /** The 1 ms interval probe's longest gap minus 1 ms. */
  intervalMs: number;
  /** The most CPU time (user + system) the process spent in any one gap between probe ticks, in ms. */
  busiestGapCpuMs: number;
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Starts both probes; `stop()` ends them and returns the longest block each saw. */
export function watchEventLoop(): { stop(): LoopBlock } {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  let last = performance.now();
  let lastCpu = cpuMs();
  let longest = 0;
  let busiest = 0;
  const tick = () => {
    const now = performance.now();
    const cpu = cpuMs();
    longest = Math.max(longest, now - last);
    busiest = Math.max(busiest, cpu - lastCpu);
    last = now;
    lastCpu = cpu;
  };
  const probe = setInterval(tick, 1);
  return {
    stop() {
      tick();
      clearInterval(probe);
      histogram.disable();
      return {
        histogramMs: histogram.max / 1e6,
        intervalMs: Math.max(0, longest - 1),
        busiestGapCpuMs: busiest,
      };
    },
  };
}
