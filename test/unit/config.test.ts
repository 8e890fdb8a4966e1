import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, memoryDbPath } from '../../worker/config.js';
import { tracesUrl } from '../../worker/tracing.js';
import { TemporalCliError, ensureTemporalCli } from '../../dev/temporal-cli.js';

describe('loadConfig', () => {
  it('has working defaults', () => {
    const config = loadConfig({});
    expect(config.temporal).toEqual({
      address: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'sessions',
      warnings: [],
    });
    expect(config.encryptionKeys).toEqual([]);
    expect(config.models.provider).toBe('local');
  });

  it('names the variable that holds a bad value', () => {
    expect(() => loadConfig({ HARNESS_RECALL_K: 'lots' })).toThrow(ConfigError);
    expect(() => loadConfig({ HARNESS_RECALL_K: 'lots' })).toThrow(/HARNESS_RECALL_K/);
    expect(() => loadConfig({ OPENAI_BASE_URL: 'not a url' })).toThrow(/OPENAI_BASE_URL: must be a URL/);
    expect(() => loadConfig({ HARNESS_MODEL_PROVIDER: 'azure' })).toThrow(/HARNESS_MODEL_PROVIDER/);
  });

  it('resolves one model per role, a role-specific name winning over HARNESS_MODEL', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'k', HARNESS_MODEL: 'gpt-4.1-mini', HARNESS_AGENT_MODEL: 'gpt-4.1' });
    expect(config.models.provider).toBe('openai');
    expect(config.models.byRole).toEqual({
      relevance: 'gpt-4.1-mini',
      extraction: 'gpt-4.1-mini',
      orchestration: 'gpt-4.1-mini',
      compaction: 'gpt-4.1-mini',
      agent: 'gpt-4.1',
    });
  });

  it("reads max_tokens per helper role and the local provider's thread count", () => {
    const config = loadConfig({ HARNESS_COMPACTION_MAX_TOKENS: '2048', HARNESS_LOCAL_THREADS: '0' });
    expect(config.models.maxTokens).toEqual({ compaction: 2048 });
    expect(config.models.localThreads).toBe(0);
    expect(loadConfig({}).models.localThreads).toBeUndefined();
    expect(() => loadConfig({ HARNESS_RELEVANCE_MAX_TOKENS: '0' })).toThrow(/HARNESS_RELEVANCE_MAX_TOKENS/);
  });

  it('judges relevance and extracts terms in one call unless HARNESS_UNDERSTANDING=separate', () => {
    expect(loadConfig({}).models.understanding).toBe('combined');
    expect(loadConfig({ HARNESS_UNDERSTANDING: 'separate' }).models.understanding).toBe('separate');
    expect(() => loadConfig({ HARNESS_UNDERSTANDING: 'both' })).toThrow(/HARNESS_UNDERSTANDING/);
  });

  it('uses the openai provider for a keyless OpenAI-compatible server such as Ollama', () => {
    expect(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' }).models.provider).toBe('openai');
    expect(loadConfig({ OPENAI_API_KEY: 'k', HARNESS_MODEL_PROVIDER: 'local' }).models.provider).toBe('local');
  });
});

describe('tracing configuration', () => {
  it('is off without OTEL_EXPORTER_OTLP_ENDPOINT and names the service session-harness-worker', () => {
    expect(loadConfig({}).telemetry).toMatchObject({ otlpEndpoint: undefined, serviceName: 'session-harness-worker' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }).telemetry.otlpEndpoint).toBeUndefined();
  });

  it('takes an http(s) base URL and OTEL_SERVICE_NAME', () => {
    const config = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_SERVICE_NAME: 'sessions-eu',
    });
    expect(config.telemetry).toMatchObject({ otlpEndpoint: 'http://collector:4318', serviceName: 'sessions-eu' });
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/,
    );
  });

  it('sends to <endpoint>/v1/traces, with or without a trailing slash or a path', () => {
    expect(tracesUrl('http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('https://otel.example/otlp')).toBe('https://otel.example/otlp/v1/traces');
  });
});

describe('the memory database path, one rule for the worker and `harness memory`', () => {
  it('is HARNESS_MEMORY_DB, else memory.db in HARNESS_DATA_DIR, else .data/memory.db', () => {
    expect(memoryDbPath({})).toBe(resolve('.data/memory.db'));
    expect(memoryDbPath({ HARNESS_DATA_DIR: '/srv/harness' })).toBe('/srv/harness/memory.db');
    expect(memoryDbPath({ HARNESS_DATA_DIR: '/srv/harness', HARNESS_MEMORY_DB: 'mem.db' })).toBe(resolve('mem.db'));
  });

  it('is the file the worker configuration opens', () => {
    for (const env of [{}, { HARNESS_DATA_DIR: '/srv/harness' }, { HARNESS_MEMORY_DB: '/tmp/m.db' }]) {
      expect(loadConfig(env).memoryDb).toBe(memoryDbPath(env));
    }
  });
});

describe('ensureTemporalCli', () => {
  it('uses TEMPORAL_CLI_PATH when it is executable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-'));
    const fake = join(dir, 'temporal');
    writeFileSync(fake, '#!/bin/sh\n');
    chmodSync(fake, 0o755);
    expect(ensureTemporalCli({ env: { TEMPORAL_CLI_PATH: fake } })).toBe(fake);
  });

  it('says so when TEMPORAL_CLI_PATH is not executable', () => {
    expect(() => ensureTemporalCli({ env: { TEMPORAL_CLI_PATH: '/nonexistent/temporal' } })).toThrow(TemporalCliError);
  });

  it('tells a user without Go what to install or set', () => {
    const emptyCache = mkdtempSync(join(tmpdir(), 'cache-'));
    const run = () => ensureTemporalCli({ env: { XDG_CACHE_HOME: emptyCache, PATH: '/nonexistent' }, log: () => {} });
    expect(run).toThrow(/Install Go 1.25 or newer/);
    expect(run).toThrow(/TEMPORAL_CLI_PATH/);
  });
});
