/**
 * What listens where by default: nothing of ours, nor the compose file's Temporal and Web UI, answers
 * on interfaces other than loopback unless the operator says so.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../worker/config.js';

describe('listeners', () => {
  it('the metrics endpoint binds 127.0.0.1 unless HARNESS_METRICS_HOST says otherwise', () => {
    expect(loadConfig({ HARNESS_METRICS_PORT: '9464' }).telemetry.metricsHost).toBe('127.0.0.1');
    expect(loadConfig({ HARNESS_METRICS_HOST: '0.0.0.0' }).telemetry.metricsHost).toBe('0.0.0.0');
  });

  it('the compose file publishes every port on the host loopback only', () => {
    const compose = readFileSync(new URL('../../deploy/compose.yaml', import.meta.url), 'utf8');
    const published = [...compose.matchAll(/^\s*ports:\n((?:\s+- .*\n)+)/gm)].flatMap((m) =>
      m[1]!
        .trim()
        .split('\n')
        .map((line) => line.trim().replace(/^- /, '').replace(/'/g, '')),
    );
    expect(published.length).toBeGreaterThanOrEqual(3);
    for (const port of published) expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
  });
});
