/**
 * Configuration errors end up in terminals, CI logs and log shippers: they name the bad variable but
 * never quote a credential it holds.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactCredentials, shownValue } from '../../worker/config.js';

function configError(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration errors', () => {
  it('mask the password of a memory URL that is not PostgreSQL', () => {
    const message = configError({ HARNESS_MEMORY_URL: 'mysql://harness:hunter2@db.internal:3306/memories' });
    expect(message).toContain('HARNESS_MEMORY_URL');
    expect(message).toContain('mysql://harness:***@db.internal:3306/memories');
    expect(message).not.toContain('hunter2');
  });

  it('mask userinfo and secret query parameters in any URL variable', () => {
    const message = configError({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://ingest-token-9f8e7d@collector:4317',
      OPENAI_BASE_URL: 'api.example.com/v1?api_key=sk-live-abc123&region=eu',
    });
    expect(message).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(message).toContain('OPENAI_BASE_URL');
    expect(message).not.toContain('ingest-token-9f8e7d');
    expect(message).not.toContain('sk-live-abc123');
    expect(message).toContain('region=eu');
  });

  it('never quote a secret-named variable', () => {
    expect(shownValue('HARNESS_CODEC_AUTH_TOKEN', 'Bearer s3cr3t')).toBe('a value of 13 characters, not shown');
    expect(shownValue('OPENAI_API_KEY', 'sk-1')).not.toContain('sk-1');
    expect(shownValue('HARNESS_RECALL_K', 'many')).toBe('"many"');
  });

  it('leave text without credentials as it is', () => {
    expect(redactCredentials('postgres://db:5432/x?sslmode=require')).toBe('postgres://db:5432/x?sslmode=require');
    expect(redactCredentials('postgres://svc:p%40ss@db/x?password=x&sslpassword=y')).toBe(
      'postgres://svc:***@db/x?password=***&sslpassword=***',
    );
  });
});
