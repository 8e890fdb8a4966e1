/**
 * Where and how to reach Temporal, read the way Temporal's own CLI and SDKs read it
 * (@temporalio/envconfig): a `temporal.toml` profile (`TEMPORAL_CONFIG_FILE`, default
 * `~/.config/temporalio/temporal.toml`; `TEMPORAL_PROFILE` picks one), overridden by `TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`, `TEMPORAL_TLS_*` and `TEMPORAL_GRPC_META_*`,
 * overridden in turn by explicit values (CLI flags, library options). The worker, the client
 * library and the CLI all resolve their connection here, so one environment configures all three.
 */
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import { loadClientConfigProfile, type ClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';

/** Old names the `harness` CLI read before it followed Temporal's; still honoured, with a warning. */
export const DEPRECATED_TLS_ENV = {
  TEMPORAL_TLS_CERT: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  TEMPORAL_TLS_KEY: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
  TEMPORAL_TLS_CA: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
} as const;

export const DEFAULT_ADDRESS = 'localhost:7233';
export const DEFAULT_NAMESPACE = 'default';

/** Explicit values that win over the profile and the environment (e.g. CLI flags). */
export interface ConnectionOverrides {
  address?: string;
  namespace?: string;
  apiKey?: string;
  /** `true`/`false` forces TLS on/off; file paths add to (and win over) the profile's TLS settings. */
  tls?: boolean | { certFile?: string; keyFile?: string; caFile?: string; serverName?: string };
  /** Profile name; default `TEMPORAL_PROFILE`, else `default`. */
  profile?: string;
  /** TOML file; default `TEMPORAL_CONFIG_FILE`, else `~/.config/temporalio/temporal.toml`. */
  configFile?: string;
}

/** A resolved connection: what both `Connection.connect` and `NativeConnection.connect` take. */
export interface TemporalConnectionSettings {
  address: string;
  namespace: string;
  apiKey?: string;
  /** `undefined`: plaintext (unless an API key turns TLS on). */
  tls?: TLSConfig | boolean;
  /** gRPC headers from the profile's `grpc_meta` or `TEMPORAL_GRPC_META_*`. */
  metadata?: Record<string, string>;
  /** Deprecation notes to show the user once. */
  warnings: string[];
}

export class ConnectionConfigError extends Error {
  override name = 'ConnectionConfigError';

  /** `field` names the offending setting in ConnectionOverrides terms (e.g. `tls.certFile`), if one. */
  constructor(
    message: string,
    readonly field = '',
  ) {
    super(message);
  }
}

/**
 * Resolves the connection from the profile, the environment and `overrides`. Throws
 * ConnectionConfigError for an unknown profile, a malformed TOML file, half an mTLS pair or an
 * unreadable certificate file.
 */
export function resolveConnection(
  overrides: ConnectionOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): TemporalConnectionSettings {
  const { env: modern, warnings } = withDeprecatedAliases(env);
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({
      ...(overrides.profile ? { profile: overrides.profile } : {}),
      ...(overrides.configFile ? { configSource: { path: overrides.configFile } } : {}),
      overrideEnvVars: modern,
    });
  } catch (err) {
    throw new ConnectionConfigError(`Temporal connection profile: ${(err as Error).message}`);
  }
  const tlsSettings = mergeTls(profile.tls, overrides.tls);
  const apiKey = overrides.apiKey ?? profile.apiKey;
  const tls = toTls(tlsSettings) ?? (apiKey ? true : undefined);
  return {
    address: overrides.address ?? profile.address ?? DEFAULT_ADDRESS,
    namespace: overrides.namespace ?? profile.namespace ?? DEFAULT_NAMESPACE,
    ...(apiKey ? { apiKey } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(profile.grpcMeta && Object.keys(profile.grpcMeta).length > 0 ? { metadata: profile.grpcMeta } : {}),
    warnings,
  };
}

/** The fields `Connection.connect`/`NativeConnection.connect` need from the settings. */
export function connectionOptions(s: TemporalConnectionSettings): {
  address: string;
  apiKey?: string;
  tls?: TLSConfig | boolean;
  metadata?: Record<string, string>;
} {
  return {
    address: s.address,
    ...(s.apiKey ? { apiKey: s.apiKey } : {}),
    ...(s.tls !== undefined ? { tls: s.tls } : {}),
    ...(s.metadata ? { metadata: s.metadata } : {}),
  };
}

/** Copies the deprecated names onto the current ones (the current name wins) and says so. */
function withDeprecatedAliases(env: NodeJS.ProcessEnv): { env: Record<string, string>; warnings: string[] } {
  const modern: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) modern[key] = value;
  const warnings: string[] = [];
  for (const [old, current] of Object.entries(DEPRECATED_TLS_ENV)) {
    const value = env[old]?.trim();
    if (!value) continue;
    if (modern[current]) {
      warnings.push(`${old} is deprecated and ignored because ${current} is set`);
    } else {
      modern[current] = value;
      warnings.push(`${old} is deprecated; use ${current}`);
    }
  }
  return { env: modern, warnings };
}

function mergeTls(
  profile: ClientConfigTLS | undefined,
  override: ConnectionOverrides['tls'],
): ClientConfigTLS | undefined {
  if (override === undefined) return profile;
  if (override === false) return { disabled: true };
  if (override === true) return { ...profile, disabled: false };
  return {
    ...profile,
    disabled: false,
    ...(override.certFile ? { clientCert: { path: override.certFile } } : {}),
    ...(override.keyFile ? { clientKey: { path: override.keyFile } } : {}),
    ...(override.caFile ? { serverCACert: { path: override.caFile } } : {}),
    ...(override.serverName ? { serverName: override.serverName } : {}),
  };
}

/** ClientConfigTLS to the SDK's TLSConfig, reading the files now so a bad path fails at start. */
function toTls(config: ClientConfigTLS | undefined): TLSConfig | boolean | undefined {
  if (config === undefined) return undefined;
  if (config.disabled === true) return false;
  if (Boolean(config.clientCert) !== Boolean(config.clientKey)) {
    throw new ConnectionConfigError(
      'mTLS needs both a client certificate and its key (TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH)',
      config.clientCert ? 'tls.keyFile' : 'tls.certFile',
    );
  }
  const tls: TLSConfig = {};
  const ca = read(config.serverCACert, 'server CA certificate', 'tls.caFile');
  if (ca) tls.serverRootCACertificate = ca;
  const crt = read(config.clientCert, 'client certificate', 'tls.certFile');
  const key = read(config.clientKey, 'client key', 'tls.keyFile');
  if (crt && key) tls.clientCertPair = { crt, key };
  if (config.serverName) tls.serverNameOverride = config.serverName;
  return tls;
}

function read(source: ClientConfigTLS['clientCert'], what: string, field: string): Buffer | undefined {
  if (!source) return undefined;
  if ('data' in source) return Buffer.from(source.data);
  try {
    // Sync on purpose: this runs once at start-up, before any connection exists.
    return readFileSync(source.path);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConnectionConfigError(`cannot read the ${what} file ${source.path}: ${why}`, field);
  }
}
