/**
 * How long the event loop was blocked during some work, measured two ways at once: perf_hooks'
 * `monitorEventLoopDelay` (its max) and a 1 ms `setInterval` probe (the longest gap between its
 * ticks beyond the 1 ms it asked for, the stretch up to `stop()` included). The probe also notes the
 * CPU time the process spent during its longest gap: a gap far longer than that CPU time was the
 * process waiting for a core (a loaded machine), not the event loop busy with work.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

export interface LoopBlock {
  /** `monitorEventLoopDelay({ resolution: 1 })`'s max, in ms. */
  histogramMs: number;
  /** The 1 ms interval probe's longest gap minus 1 ms. */
  intervalMs: number;
  /** CPU time (user + system, all of the process's threads) during that longest gap, in ms. */
  intervalCpuMs: number;
}

/** Starts both probes; `stop()` ends them and returns the longest block each saw. */
export function watchEventLoop(): { stop(): LoopBlock } {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  let last = performance.now();
  let lastCpu = process.cpuUsage();
  let longest = 0;
  let longestCpu = 0;
  const tick = () => {
    const now = performance.now();
    const cpu = process.cpuUsage();
    if (now - last > longest) {
      longest = now - last;
      longestCpu = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
    }
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
        intervalCpuMs: longestCpu,
      };
    },
  };
}
